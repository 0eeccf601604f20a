/**
 * `npm run worker` beside `npm start` on the embedded default: the API on an embedded
 * database in a DATA_DIR (no DATABASE_URL), a worker process with the same DATA_DIR and no
 * DATABASE_URL reaching that database through its socket, Redis for the queue, objects in
 * DATA_DIR. A SignedData conversion completes and jose verifies its JWS with the signer's key,
 * while the API keeps answering queries of its own on the same database.
 * Needs Redis (TEST_REDIS_URL or 127.0.0.1:6379).
 */
import { createPublicKey, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { flattenedVerify } from 'jose';
import { OpenSslDir, makeKey, type TestKey } from '../../../support/fixtures/pkcs7.ts';
import { startTestApp, type TestApp } from '../../../support/app.ts';
import { api } from '../../../support/auth.ts';
import { TEST_REDIS_URL } from '../../../support/database.ts';
import { SCHEMA } from '../../../shared/config/schema.ts';
import {
  MASTER_KEY,
  finished,
  result,
  spawnWorker,
  tenantWithKeys,
  upload,
  waitForJob,
  type WorkerChild,
} from './harness.ts';
import { cms } from '../../../support/fixtures/cms.ts';

let app: TestApp;
let ssl: OpenSslDir;
let signer: TestKey;
let worker: WorkerChild | undefined;
let dataDir: string;
const prefix = `kwtest-${randomBytes(4).toString('hex')}`;
const queueEnv = { QUEUE_PREFIX: prefix, JOB_PROGRESS_INTERVAL_MS: '100' };

beforeAll(async () => {
  ssl = new OpenSslDir();
  signer = makeKey(ssl, 'embedded-signer', 'rsa-2048');
  dataDir = mkdtempSync(join(tmpdir(), 'keyward-embedded-worker-'));
  app = await startTestApp({ REDIS_URL: TEST_REDIS_URL, ...queueEnv }, { dataDir });
}, 60_000);

afterAll(async () => {
  await worker?.stop();
  const redis = app?.ctx.redis;
  if (redis) {
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
  }
  await app?.stop();
  rmSync(dataDir, { recursive: true, force: true });
  ssl?.cleanup();
});

/** A worker's environment as `npm run worker` has it beside `npm start`: no DATABASE_URL. */
function workerEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const field of Object.values(SCHEMA)) delete env[field.env];
  return {
    ...env,
    ...queueEnv,
    REDIS_URL: TEST_REDIS_URL,
    KEYWARD_MASTER_KEY: MASTER_KEY,
    DATA_DIR: dataDir,
    LOG_LEVEL: 'info',
    WORKER_METRICS_PORT: '0',
    WORKER_NICE: '0',
  };
}

describe('when the API runs on the embedded default and a worker is started beside it', () => {
  it('then the worker reaches the embedded database through its socket, a conversion completes and jose verifies it, and the API keeps serving', async () => {
    const tenant = await tenantWithKeys(app, ssl, [{ ...signer, usage: 'sign' }]);
    worker = await spawnWorker(workerEnv(), 60_000);
    const content = randomBytes(30_000);
    ssl.write('embedded.bin', content);
    const file = cms.sign(ssl, 'embedded.bin', {
      by: signer,
      detached: false,
      binary: true,
      outform: 'DER',
    });
    expect((await upload(app, tenant.token, 'in/doc.p7m', file)).status).toBe(201);
    const submit = await api(app, 'POST', '/api/v3/migration/jobs', tenant.token, {
      source: { key: 'in/doc.p7m' },
      metadata: {},
      output: { prefix: 'out/' },
    });
    expect(submit.status).toBe(202);
    const id = String(submit.body.id);
    const done = await waitForJob(app, tenant.token, id, finished, 60_000);
    expect(done.state).toBe('completed');
    const r = await result(app, tenant.token, id);
    expect(r.status).toBe(200);
    const jws = JSON.parse(r.body.toString());
    await expect(
      flattenedVerify({ ...jws, payload: content }, createPublicKey(signer.privateKey)),
    ).resolves.toBeTruthy();
    // The API's own queries still answer while the worker stays connected.
    expect((await api(app, 'GET', `/api/v3/migration/jobs/${id}`, tenant.token)).body.state).toBe(
      'completed',
    );
    expect(worker.process.exitCode).toBeNull();
  }, 120_000);

  it('then a worker whose keyring cannot open the database exits 2 naming the ids, before it takes a job', async () => {
    const wrong = `k9:${randomBytes(32).toString('base64')}`;
    const refused = await spawnWorker({ ...workerEnv(), KEYWARD_MASTER_KEY: wrong }, 30_000).catch(
      (err: Error) => err.message,
    );
    expect(refused).toMatch(/exited with 2/);
    expect(refused).toMatch(/KEYWARD_MASTER_KEY cannot open this database's key material/);
    expect(refused).toMatch(/the keyring holds k9/);
  }, 60_000);

  it('then a worker whose DATA_DIR has no API running exits naming DATA_DIR and DATABASE_URL', async () => {
    const other = mkdtempSync(join(tmpdir(), 'keyward-embedded-none-'));
    try {
      const lonely = await spawnWorker({ ...workerEnv(), DATA_DIR: other }, 30_000).catch(
        (err: Error) => err.message,
      );
      expect(lonely).toMatch(/exited with 1/);
      expect(lonely).toMatch(/embedded database of DATA_DIR .* is not reachable/);
      expect(lonely).toMatch(/DATABASE_URL/);
    } finally {
      rmSync(other, { recursive: true, force: true });
    }
  }, 60_000);
});
