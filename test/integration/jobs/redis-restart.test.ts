/**
 * A Redis restart in the middle of a batch loses no job. The test runs its own redis-server with
 * append-only persistence (as production does; the machine's shared Redis keeps nothing on disk),
 * restarts it while two worker processes are converting, and expects every object converted.
 */
import { randomBytes } from 'node:crypto';
import { OpenSslDir, makeKey, type TestKey } from '../../../support/fixtures/pkcs7.ts';
import { api } from '../../../support/auth.ts';
import { startRedisServer, type TestRedisServer } from '../../support/redis-server.ts';
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
import { cms } from '../../../support/fixtures/cms.ts';

const FILES = 40;

let redis: TestRedisServer;
let env: JobsEnv;
let ssl: OpenSslDir;
let key: TestKey;
let tenant: { tenantId: string; token: string };
const workers: WorkerChild[] = [];

beforeAll(async () => {
  redis = await startRedisServer();
  ssl = new OpenSslDir();
  key = makeKey(ssl, 'restart-rsa', 'rsa-2048');
  env = await startJobsEnv({ redisUrl: redis.url });
  tenant = await tenantWithKeys(env.app, ssl, [key]);
  // A few distinct inputs of 1 to 4 MiB, uploaded under FILES names.
  const inputs = [1, 2, 3, 4].map((mib, i) => {
    ssl.write(`plain-${i}.bin`, randomBytes(mib * 1024 * 1024));
    return cms.encrypt(ssl, `plain-${i}.bin`, {
      to: { recip: key },
      cipher: 'aes-256-cbc',
      binary: true,
      stream: true,
      outform: 'DER',
    });
  });
  for (let i = 0; i < FILES; i++)
    expect(
      (
        await upload(
          env.app,
          tenant.token,
          `in/file-${String(i).padStart(2, '0')}.p7m`,
          inputs[i % inputs.length],
        )
      ).status,
    ).toBe(201);
}, 60_000);

afterAll(async () => {
  await Promise.all(workers.map((w) => w.stop()));
  await env?.close();
  await redis?.close();
  ssl?.cleanup();
});

describe('Redis restart during a batch (own append-only redis-server)', () => {
  it('when Redis restarts while two workers convert a batch, then every job still completes and every output exists', async () => {
    const batch = await api(env.app, 'POST', '/api/v3/migration/jobs', tenant.token, {
      source: { prefix: 'in/' },
      metadata: {},
      output: { prefix: 'out/' },
    });
    expect(batch.status).toBe(202);
    const id = batch.body.id as string;
    workers.push(
      ...(await Promise.all([spawnWorker(env.workerEnv()), spawnWorker(env.workerEnv())])),
    );
    const before = await waitForJob(
      env.app,
      tenant.token,
      id,
      (v) => v.progress.objectsDone >= 2,
      30_000,
    );
    expect(before.progress.objectsDone).toBeLessThan(FILES);

    await redis.restart();

    const done = await waitForJob(env.app, tenant.token, id, finished, 45_000);
    expect(done).toMatchObject({
      state: 'completed',
      progress: { objectsTotal: FILES, objectsDone: FILES, objectsFailed: 0 },
      failures: [],
    });
    const outputs: string[] = [];
    for await (const o of tenantStore(await env.app.ctx.objectStore.get(), tenant.tenantId).list(
      'out/',
    ))
      outputs.push(o.key);
    expect(outputs).toHaveLength(FILES);
    expect(outputs.every((k) => /^out\/file-\d\d\.p7m\.jwe$/.test(k))).toBe(true);
    // Both workers lived through it.
    for (const w of workers) expect(w.process.exitCode).toBeNull();
  }, 60_000);
});
