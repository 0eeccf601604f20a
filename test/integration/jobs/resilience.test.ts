/**
 * Failure behaviour of real worker processes: one killed in the middle of a 200 MiB conversion
 * leaves no output and another worker completes the job; storage that cannot be reached retries
 * with backoff and then fails with a clear problem; a running job cancelled or released on
 * shutdown leaves no output either.
 */
import { constants, createDecipheriv, createHash, privateDecrypt } from 'node:crypto';
import {
  createReadStream,
  createWriteStream,
  openSync,
  readSync,
  closeSync,
  statSync,
  mkdtempSync,
  rmSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  OpenSslDir,
  makeKey,
  syntheticEnveloped,
  type TestKey,
} from '../../../support/fixtures/pkcs7.ts';
import { api } from '../../../support/auth.ts';
import { tenantStore } from '../../../shared/storage/index.ts';
import {
  finished,
  spawnWorker,
  startJobsEnv,
  tenantWithKeys,
  upload,
  waitForJob,
  type JobsEnv,
  type WorkerChild,
} from './harness.ts';

const MiB = 1024 * 1024;
const BIG = 200 * MiB;
const JOBS = '/api/v3/migration/jobs';

let env: JobsEnv;
let ssl: OpenSslDir;
let key: TestKey;
let tenant: { tenantId: string; token: string };
let tmp: string;
let inputSize: number;
const workers: WorkerChild[] = [];

beforeAll(async () => {
  ssl = new OpenSslDir();
  key = makeKey(ssl, 'resilience-rsa', 'rsa-2048');
  tmp = mkdtempSync(join(tmpdir(), 'keyward-resilience-'));
  env = await startJobsEnv({ queue: { JOB_ATTEMPTS: '3', JOB_BACKOFF_MS: '300' } });
  tenant = await tenantWithKeys(env.app, ssl, [key]);
  // One 200 MiB EnvelopedData, generated on the fly and streamed up through the uploads endpoint.
  const up = await upload(
    env.app,
    tenant.token,
    'big/archive.p7m',
    Readable.toWeb(Readable.from(syntheticEnveloped(key, BIG, MiB))) as ReadableStream<Uint8Array>,
  );
  expect(up.status).toBe(201);
  inputSize = up.body.size as number;
}, 60_000);

afterAll(async () => {
  await Promise.all(workers.map((w) => w.stop()));
  await env?.close();
  ssl?.cleanup();
  rmSync(tmp, { recursive: true, force: true });
});

const objects = async () => tenantStore(await env.app.ctx.objectStore.get(), tenant.tenantId);
const submit = (source: unknown, outPrefix: string) =>
  api(env.app, 'POST', JOBS, tenant.token, { source, metadata: {}, output: { prefix: outPrefix } });
const start = async (extra: Record<string, string> = {}) => {
  const w = await spawnWorker(env.workerEnv({ WORKER_CONCURRENCY: '1', ...extra }));
  workers.push(w);
  return w;
};

/** Streams the downloaded JWE from a file through AES-256-GCM: the plaintext must be BIG bytes of 0x5a. */
async function checkBigJwe(file: string, contentType: string): Promise<void> {
  const boundary = /boundary="([^"]+)"/.exec(contentType)![1];
  const fd = openSync(file, 'r');
  const head = Buffer.alloc(64 * 1024);
  readSync(fd, head, 0, head.length, 0);
  const size = statSync(file).size;
  const tail = Buffer.alloc(256);
  readSync(fd, tail, 0, tail.length, size - tail.length);
  closeSync(fd);
  const firstBody = head.indexOf('\r\n\r\n') + 4;
  const jsonEnd = head.indexOf(`\r\n--${boundary}`, firstBody);
  const jwe = JSON.parse(head.subarray(firstBody, jsonEnd).toString());
  const ctStart = head.indexOf('\r\n\r\n', jsonEnd) + 4;
  const ctEnd = size - tail.length + tail.lastIndexOf(`\r\n--${boundary}--`);
  const cek = privateDecrypt(
    { key: key.privateKey, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: 'sha256' },
    Buffer.from(jwe.recipients[0].encrypted_key, 'base64url'),
  );
  const decipher = createDecipheriv('aes-256-gcm', cek, Buffer.from(jwe.iv, 'base64url'));
  decipher.setAAD(Buffer.from(jwe.protected, 'ascii'));
  const tagFd = openSync(file, 'r');
  const tag = Buffer.alloc(16);
  readSync(tagFd, tag, 0, 16, ctEnd - 16);
  closeSync(tagFd);
  decipher.setAuthTag(tag);
  const hash = createHash('sha256');
  let plainBytes = 0;
  await pipeline(
    createReadStream(file, { start: ctStart, end: ctEnd - 17 }),
    decipher,
    async (src: AsyncIterable<Buffer>) => {
      for await (const chunk of src) {
        plainBytes += chunk.length;
        hash.update(chunk);
      }
    },
  );
  expect(JSON.parse(Buffer.from(jwe.protected, 'base64url').toString())).toMatchObject({
    enc: 'A256GCM',
  });
  expect(plainBytes).toBe(BIG);
  expect(hash.digest('hex')).toBe(
    createHash('sha256').update(Buffer.alloc(BIG, 0x5a)).digest('hex'),
  );
}

describe('worker failures (real Redis, s3rver, worker processes)', () => {
  it('when the worker is killed in the middle of a 200 MiB job, then no output appears and another worker completes the job', async () => {
    const a = await start();
    const job = await submit({ key: 'big/archive.p7m' }, 'killed/');
    expect(job.status).toBe(202);
    const id = job.body.id as string;
    const midway = await waitForJob(
      env.app,
      tenant.token,
      id,
      (v) => v.state === 'active' && v.progress.bytesRead >= 20 * MiB,
      30_000,
    );
    a.process.kill('SIGKILL');
    expect(await a.exited).toBe('SIGKILL');
    expect(midway.progress.bytesRead).toBeLessThan(BIG);
    const store = await objects();
    expect(await store.head('killed/archive.p7m.jwe')).toBeNull();
    for await (const o of store.list('killed/')) throw new Error(`unexpected object ${o.key}`);

    const b = await start();
    // Limits, not timings: 200 MiB converted again after the stall, on a machine CI may load.
    const done = await waitForJob(env.app, tenant.token, id, finished, 150_000);
    expect(done).toMatchObject({
      state: 'completed',
      result: { key: 'killed/archive.p7m.jwe' },
      progress: { bytesRead: inputSize, objectsDone: 1 },
    });
    expect(await b.waitForOutput('conversion completed')).toContain('job stalled');

    const res = await fetch(`${env.app.url}${JOBS}/${id}/result`, {
      headers: { authorization: `Bearer ${tenant.token}` },
    });
    expect(res.status).toBe(200);
    const file = join(tmp, 'result.jwe');
    await pipeline(Readable.fromWeb(res.body as never), createWriteStream(file));
    expect(statSync(file).size).toBe(done.result.size);
    await checkBigJwe(file, res.headers.get('content-type')!);
    await b.stop();
  }, 240_000);

  it('when object storage is unreachable, then the job retries with backoff and fails with a clear storage-unavailable problem', async () => {
    const w = await start({ S3_ENDPOINT: 'http://127.0.0.1:9' });
    expect(w.output()).toContain('object storage is not reachable yet');
    const job = await submit({ key: 'big/archive.p7m' }, 'unreachable/');
    const done = await waitForJob(env.app, tenant.token, job.body.id as string, finished, 30_000);
    expect(done).toMatchObject({
      state: 'failed',
      attempts: { made: 3, max: 3 },
      result: null,
      problem: {
        type: expect.stringMatching(/\/problems\/storage-unavailable$/),
        title: 'Storage Unavailable',
        status: 503,
        detail: expect.stringContaining('object storage unreachable'),
        transient: true,
      },
    });
    const log = await w.waitForOutput('conversion failed after its last attempt');
    expect(log.match(/transient fault, will retry with backoff/g)).toHaveLength(2);
    expect(await w.stop()).toBe(0);
  }, 40_000);

  it('when a running job is cancelled, then it stops, reads as cancelled and leaves no output', async () => {
    const w = await start();
    const job = await submit({ key: 'big/archive.p7m' }, 'cancelled/');
    const id = job.body.id as string;
    await waitForJob(
      env.app,
      tenant.token,
      id,
      (v) => v.state === 'active' && v.progress.bytesRead > 0,
      20_000,
    );
    const cancel = await api(env.app, 'DELETE', `${JOBS}/${id}`, tenant.token);
    expect(cancel.status).toBe(202);
    expect(['cancelling', 'cancelled']).toContain(cancel.body.state);
    const done = await waitForJob(env.app, tenant.token, id, finished, 20_000);
    expect(done).toMatchObject({
      state: 'cancelled',
      problem: { type: expect.stringMatching(/\/problems\/job-cancelled$/), status: 409 },
    });
    expect(await (await objects()).head('cancelled/archive.p7m.jwe')).toBeNull();
    await w.waitForOutput('cancelling running job');
    expect(await w.stop()).toBe(0);
  }, 40_000);

  it('when a worker gets SIGTERM during a job longer than the shutdown timeout, then it releases the job to the queue and exits 0', async () => {
    const w = await start({ SHUTDOWN_TIMEOUT_MS: '300' });
    const job = await submit({ key: 'big/archive.p7m' }, 'released/');
    const id = job.body.id as string;
    await waitForJob(
      env.app,
      tenant.token,
      id,
      (v) => v.state === 'active' && v.progress.bytesRead > 0,
      20_000,
    );
    expect(await w.stop()).toBe(0);
    expect(w.output()).toContain('released the job back to the queue');
    const view = (await api(env.app, 'GET', `${JOBS}/${id}`, tenant.token)).body;
    expect(view).toMatchObject({ state: 'queued', attempts: { made: 0 } });
    expect(await (await objects()).head('released/archive.p7m.jwe')).toBeNull();
  }, 40_000);
});
