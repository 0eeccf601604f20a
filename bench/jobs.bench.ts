/**
 * Queued batch conversion against the streaming HTTP endpoint, same files, same concurrency.
 *
 * 200 PKCS#7 files of 10 KiB to 4 MiB (log-uniform sizes, half SignedData, half EnvelopedData,
 * made by openssl) are converted (a) by one batch job consumed by 2 worker processes of
 * concurrency 1, timed from POST /jobs to the batch reading completed, the inputs already in
 * object storage (DATA_DIR, shared by the API and the workers); and (b) one by one through
 * POST /api/v3/migration/stream/convert-pkcs7-to-jose, 2 requests in flight, each response read
 * whole. Rounds run A B B A; the figure is input MB/s, the ratio queue / HTTP (target >= 0.8).
 *
 * Needs Postgres (BENCH_DATABASE_URL, TEST_DATABASE_URL or 127.0.0.1:5432) and Redis
 * (REDIS_URL or 127.0.0.1:6379): the workers share the API's database and queue.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cleanEnv, freePort, startChild, type Child } from './lib/process.ts';
import { dropQueueKeys, pgAdmin, pool, startWorker } from './lib/jobs.ts';
import { prng } from '../support/prng.ts';
import { encryptArgs, signArgs } from '../support/fixtures/cms.ts';
import { BENCH_KEY } from './lib/cms.ts';
import { printResult } from './lib/result.ts';

const FILES = Number(process.env.BENCH_FILES ?? 200);
const CONCURRENCY = 2;
const root = new URL('..', import.meta.url).pathname;
const pgBase =
  process.env.BENCH_DATABASE_URL ??
  process.env.TEST_DATABASE_URL ??
  'postgres://postgres@127.0.0.1:5432/test';
const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const work = mkdtempSync(join(tmpdir(), 'keyward-jobs-bench-'));
const dbName = `kw_bench_${randomBytes(5).toString('hex')}`;
const children: Array<Child | { stop(): Promise<unknown> }> = [];
const queuePrefix = `kwbench-${randomBytes(3).toString('hex')}`;

const ssl = (args: string[]) =>
  execFileSync('openssl', args, {
    cwd: work,
    stdio: ['ignore', 'pipe', 'pipe'],
    maxBuffer: 64 << 20,
  });

/** Makes the keys and the files; answers [name, bytes] pairs. */
function makeFiles(): Array<{ name: string; size: number }> {
  ssl([
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    'key.pem',
    '-out',
    'cert.pem',
    '-subj',
    '/CN=bench/O=Keyward',
    '-days',
    '2',
  ]);
  const rand = prng(7);
  const plain = randomBytes(4 * 1024 * 1024);
  const files: Array<{ name: string; size: number }> = [];
  for (let i = 0; i < FILES; i++) {
    const size = Math.round(10 * 1024 * Math.exp(rand() * Math.log((4 * 1024) / 10)));
    writeFileSync(join(work, 'plain.bin'), plain.subarray(0, size));
    const name = `f${String(i).padStart(3, '0')}.p7m`;
    const form = { binary: true, outform: 'DER', out: name } as const;
    ssl(
      i % 2 === 0
        ? signArgs('plain.bin', { by: BENCH_KEY, detached: false, ...form })
        : encryptArgs('plain.bin', { to: { recip: BENCH_KEY }, cipher: 'aes-256-cbc', ...form }),
    );
    files.push({ name, size: readFileSync(join(work, name)).length });
  }
  return files;
}

async function call(
  url: string,
  method: string,
  path: string,
  token: string | null,
  body?: unknown,
): Promise<any> {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(body !== undefined && !(body instanceof FormData)
        ? { 'content-type': 'application/json' }
        : {}),
    },
    body: body === undefined ? undefined : body instanceof FormData ? body : JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 300)}`);
  return text ? JSON.parse(text) : {};
}

try {
  const files = makeFiles();
  const totalBytes = files.reduce((a, f) => a + f.size, 0);
  console.log(
    `jobs: ${FILES} files, ${(totalBytes / 1e6).toFixed(1)} MB, sizes ${files.reduce((a, f) => Math.min(a, f.size), Infinity)} to ${files.reduce((a, f) => Math.max(a, f.size), 0)} bytes, Node ${process.version}`,
  );
  await pgAdmin(pgBase, `create database ${dbName}`);
  const dbUrl = new URL(pgBase);
  dbUrl.pathname = `/${dbName}`;
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const adminPassword = randomBytes(18).toString('base64url');
  const platformTenant = randomUUID();
  const shared = {
    DATA_DIR: join(work, 'data'),
    DATABASE_URL: dbUrl.toString(),
    REDIS_URL: redisUrl,
    KEYWARD_MASTER_KEY: randomBytes(32).toString('base64'),
    QUEUE_PREFIX: queuePrefix,
  };
  children.push(
    await startChild(
      [join(root, 'api/server.ts')],
      cleanEnv({
        ...shared,
        PORT: String(port),
        HOST: '127.0.0.1',
        KEYWARD_BOOTSTRAP_TENANT_ID: platformTenant,
        KEYWARD_BOOTSTRAP_ADMIN_EMAIL: 'bench@keyward.local',
        KEYWARD_BOOTSTRAP_ADMIN_PASSWORD: adminPassword,
      }),
      `${url}/readyz`,
      60_000,
    ),
  );
  for (let i = 0; i < 2; i++)
    children.push(await startWorker(cleanEnv({ ...shared, WORKER_CONCURRENCY: '1' })));

  // A tenant with a workload allowed to upload, submit and convert, and the key imported.
  const form = (f: Record<string, string>) => new URLSearchParams(f).toString();
  const adminRes = await fetch(`${url}/api/v3/auth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: form({
      grant_type: 'password',
      username: 'bench@keyward.local',
      password: adminPassword,
      tenant_id: platformTenant,
    }),
  });
  const admin = ((await adminRes.json()) as { access_token: string }).access_token;
  const tenant = await call(url, 'POST', '/api/v3/admin/platform/tenants', admin, {
    name: 'bench',
  });
  const role = await call(url, 'POST', `/api/v3/admin/tenants/${tenant.id}/roles`, admin, {
    name: 'migrator',
    permissions: [
      'migration.uploads.write',
      'migration.jobs.create',
      'migration.jobs.read',
      'migration.jobs.result.read',
      'migration.convert',
      // Converting encrypted content decrypts it: the service asks for crypto.decrypt as well.
      'crypto.decrypt',
    ],
  });
  const workload = await call(url, 'POST', `/api/v3/admin/tenants/${tenant.id}/workloads`, admin, {
    name: 'bench',
    roleId: role.id,
  });
  // One certificate, imported once per usage: the enveloped files decrypt with one, the signed ones re-sign with the other.
  for (const [kid, usage] of [
    ['bench-rsa', 'encrypt'],
    ['bench-rsa-signer', 'sign'],
  ]) {
    const keystore = new FormData();
    keystore.append(
      'keystore',
      new Blob([
        Buffer.concat([readFileSync(join(work, 'key.pem')), readFileSync(join(work, 'cert.pem'))]),
      ]),
      'bench.pem',
    );
    keystore.append('kid', kid);
    keystore.append('usage', usage);
    await call(
      url,
      'POST',
      `/api/v3/admin/tenants/${tenant.id}/keys/import-keystore`,
      admin,
      keystore,
    );
  }
  const tokenRes = await fetch(`${url}/api/v3/auth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: form({
      grant_type: 'client_credentials',
      client_id: workload.clientId,
      client_secret: workload.clientSecret,
    }),
  });
  const token = ((await tokenRes.json()) as { access_token: string }).access_token;

  const uploadStart = performance.now();
  await pool(files, 4, async (f) => {
    const res = await fetch(`${url}/api/v3/migration/uploads/bench/in/${f.name}`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/octet-stream' },
      body: readFileSync(join(work, f.name)),
    });
    if (res.status !== 201) throw new Error(`upload ${f.name}: ${res.status} ${await res.text()}`);
  });
  console.log(
    `  uploads (not timed below): ${((performance.now() - uploadStart) / 1000).toFixed(1)} s`,
  );

  let round = 0;
  async function viaQueue(): Promise<number> {
    round += 1;
    const started = performance.now();
    const batch = await call(url, 'POST', '/api/v3/migration/jobs', token, {
      source: { prefix: 'bench/in/' },
      metadata: {},
      output: { prefix: `bench/out-${round}/` },
    });
    for (;;) {
      const view = await call(url, 'GET', `/api/v3/migration/jobs/${batch.id}`, token);
      if (['completed', 'failed', 'cancelled'].includes(view.state)) {
        if (view.progress.objectsDone !== FILES)
          throw new Error(
            `batch ended ${view.state} with ${view.progress.objectsDone}/${FILES} done: ${JSON.stringify(view.failures).slice(0, 500)}`,
          );
        return (performance.now() - started) / 1000;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  async function viaHttp(list = files): Promise<number> {
    const started = performance.now();
    await pool(list, CONCURRENCY, async (f) => {
      const body = new FormData();
      body.append('metadata', '{}');
      body.append('file', new Blob([readFileSync(join(work, f.name))]), f.name);
      const res = await fetch(`${url}/api/v3/migration/stream/convert-pkcs7-to-jose`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}` },
        body,
      });
      const out = await res.arrayBuffer();
      if (res.status !== 200 || out.byteLength === 0)
        throw new Error(
          `convert ${f.name}: ${res.status} ${Buffer.from(out).toString().slice(0, 300)}`,
        );
    });
    return (performance.now() - started) / 1000;
  }

  // Warm-up: JIT, key caches and connections are not what is measured.
  await viaHttp(files.slice(0, 20));
  await viaQueue();

  const queue: number[] = [];
  const http: number[] = [];
  for (const side of ['queue', 'http', 'http', 'queue'] as const) {
    const seconds = side === 'queue' ? await viaQueue() : await viaHttp();
    (side === 'queue' ? queue : http).push(seconds);
    console.log(
      `  ${side.padEnd(5)} ${seconds.toFixed(2)} s: ${(FILES / seconds).toFixed(1)} files/s, ${(totalBytes / 1e6 / seconds).toFixed(1)} MB/s`,
    );
  }
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const queueMBs = totalBytes / 1e6 / mean(queue);
  const httpMBs = totalBytes / 1e6 / mean(http);
  const ratio = queueMBs / httpMBs;
  console.log(
    `queued batch, 2 workers x 1:        ${(FILES / mean(queue)).toFixed(1)} files/s, ${queueMBs.toFixed(1)} MB/s`,
  );
  console.log(
    `streaming HTTP convert, 2 in flight: ${(FILES / mean(http)).toFixed(1)} files/s, ${httpMBs.toFixed(1)} MB/s`,
  );
  console.log(`ratio queue/HTTP: ${ratio.toFixed(3)} (target >= 0.8)`);
  printResult({
    name: 'jobs',
    metric: `batch of ${FILES} PKCS#7 files through the queue, 2 worker processes`,
    value: Number(queueMBs.toFixed(1)),
    baseline: 'streaming HTTP convert, 2 requests in flight',
    baselineValue: Number(httpMBs.toFixed(1)),
    ratio: Number(ratio.toFixed(3)),
    unit: 'MB/s',
    target: { op: '>=', value: 0.8, of: 'ratio' },
    notes: `${(totalBytes / 1e6).toFixed(1)} MB in ${FILES} files (10 KiB-4 MiB); files/s queue ${(FILES / mean(queue)).toFixed(1)}, HTTP ${(FILES / mean(http)).toFixed(1)}; storage DATA_DIR; 2 rounds each (ABBA)`,
  });
} finally {
  await Promise.all(children.map((c) => c.stop().catch(() => undefined)));
  await dropQueueKeys(redisUrl, queuePrefix).catch((err: Error) =>
    console.error(`could not clean Redis: ${err.message}`),
  );
  await pgAdmin(pgBase, `drop database if exists ${dbName} with (force)`).catch((err: Error) =>
    console.error(`could not drop ${dbName}: ${err.message}`),
  );
  rmSync(work, { recursive: true, force: true });
}
