/**
 * What the jobs tests share: the API in-process over a fresh Postgres database (worker processes
 * read the same keys) with s3rver as object storage and real Redis, worker child processes
 * (`node workers/worker.ts`), tenants with imported openssl keys, and small HTTP helpers.
 * Needs Postgres (TEST_DATABASE_URL or 127.0.0.1:5432) and Redis (TEST_REDIS_URL or 127.0.0.1:6379).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SCHEMA } from '../../../shared/config/schema.ts';
import { applySettings } from '../../../api/services/keys/settings.ts';
import { importKeystore } from '../../../api/services/keys/import.ts';
import { startTestApp, type TestApp } from '../../../support/app.ts';
import { scaled } from '../../../support/deadline.ts';
import { api, makeTenant, workloadToken } from '../../../support/auth.ts';
import {
  createPostgresDatabase,
  SHARED_POSTGRES_URL,
  TEST_REDIS_URL,
  type TestDatabase,
} from '../../../support/database.ts';
import { startS3Server, type TestS3Server } from '../../support/s3-server.ts';
import type { OpenSslDir, TestKey } from '../../../support/fixtures/pkcs7.ts';
import { sleep } from '../../support/time.ts';
import { JOB_PERMISSIONS } from '../../../support/job-permissions.ts';

const root = new URL('../../../', import.meta.url).pathname;
export const MASTER_KEY = Buffer.alloc(32, 7).toString('base64');
export interface JobsEnv {
  app: TestApp;
  s3: TestS3Server;
  db: TestDatabase;
  redisUrl: string;
  /** Queue settings shared by the API and the workers of this test file (own prefix). */
  queueEnv: Record<string, string>;
  /** Environment of a worker child, before overrides. */
  workerEnv(extra?: Record<string, string>): NodeJS.ProcessEnv;
  close(): Promise<void>;
}

/** Starts storage, database and the API; `queue` overrides the queue settings. */
export async function startJobsEnv(
  opts: { redisUrl?: string; queue?: Record<string, string> } = {},
): Promise<JobsEnv> {
  const redisUrl = opts.redisUrl ?? TEST_REDIS_URL;
  const queueEnv = {
    QUEUE_PREFIX: `kwtest-${randomBytes(4).toString('hex')}`,
    JOB_ATTEMPTS: '5',
    JOB_BACKOFF_MS: '200',
    JOB_LOCK_DURATION_MS: '4000',
    JOB_STALLED_INTERVAL_MS: '1000',
    JOB_PROGRESS_INTERVAL_MS: '100',
    ...opts.queue,
  };
  const s3 = await startS3Server();
  const db = await createPostgresDatabase(SHARED_POSTGRES_URL);
  const dataDir = mkdtempSync(join(tmpdir(), 'keyward-jobs-'));
  const s3Env = {
    S3_ENDPOINT: s3.endpoint,
    S3_ACCESS_KEY: s3.accessKey,
    S3_SECRET_KEY: s3.secretKey,
    S3_BUCKET: s3.bucket,
  };
  const app = await startTestApp(
    { REDIS_URL: redisUrl, ...s3Env, ...queueEnv },
    { databaseUrl: db.url, dataDir },
  );
  return {
    app,
    s3,
    db,
    redisUrl,
    queueEnv,
    workerEnv(extra = {}) {
      const env: NodeJS.ProcessEnv = { ...process.env };
      for (const field of Object.values(SCHEMA)) delete env[field.env];
      return {
        ...env,
        ...queueEnv,
        ...s3Env,
        DATABASE_URL: db.url,
        REDIS_URL: redisUrl,
        KEYWARD_MASTER_KEY: MASTER_KEY,
        DATA_DIR: dataDir,
        WORKER_CONCURRENCY: '2',
        // The tests time what the workers do beside jest's own processes: their usual priority.
        WORKER_NICE: '0',
        LOG_LEVEL: 'info',
        SHUTDOWN_TIMEOUT_MS: '5000',
        // Several workers run at once here; the metrics port is tested on its own.
        WORKER_METRICS_PORT: '0',
        ...extra,
      };
    },
    async close() {
      // Leave nothing of this file's queue in the shared Redis.
      const redis = app.ctx.redis!;
      let cursor = '0';
      do {
        const [next, keys] = await redis.scan(
          cursor,
          'MATCH',
          `${queueEnv.QUEUE_PREFIX}:*`,
          'COUNT',
          1000,
        );
        if (keys.length > 0) await redis.del(...keys);
        cursor = next;
      } while (cursor !== '0');
      await app.stop();
      await s3.close();
      await db.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export interface WorkerChild {
  process: ChildProcess;
  output(): string;
  /**
   * Resolves with the output once it contains `text`. A job's state in Redis can be read before
   * the worker's log line about it has crossed the pipe, so tests wait for the line.
   */
  waitForOutput(text: string, timeoutMs?: number): Promise<string>;
  /** Resolves with the exit code (or signal name). */
  exited: Promise<number | string | null>;
  /** SIGTERM and wait (SIGKILL after 15 s). */
  stop(): Promise<number | string | null>;
}

/** Spawns `node workers/worker.ts` and waits for its ready line (`timeoutMs` on an idle machine, scaled by the load). */
export async function spawnWorker(
  env: NodeJS.ProcessEnv,
  timeoutMs = 20_000,
): Promise<WorkerChild> {
  const child = spawn(process.execPath, [join(root, 'workers/worker.ts')], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (c: Buffer) => {
    out += c.toString();
  });
  child.stderr!.on('data', (c: Buffer) => {
    out += c.toString();
  });
  const exited = new Promise<number | string | null>((resolve) =>
    child.once('exit', (code, signal) => resolve(code ?? signal)),
  );
  const handle: WorkerChild = {
    process: child,
    output: () => out,
    async waitForOutput(text, timeoutMs = 5_000) {
      const deadline = Date.now() + timeoutMs;
      while (!out.includes(text)) {
        if (child.exitCode !== null)
          throw new Error(
            `worker exited with ${child.exitCode} before writing ${JSON.stringify(text)}:\n${out}`,
          );
        if (Date.now() > deadline)
          throw new Error(
            `worker output lacks ${JSON.stringify(text)} after ${timeoutMs} ms:\n${out}`,
          );
        await sleep(25);
      }
      return out;
    },
    exited,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const kill = setTimeout(() => child.kill('SIGKILL'), 15_000);
        const code = await exited;
        clearTimeout(kill);
        return code;
      }
      return child.exitCode ?? child.signalCode;
    },
  };
  await handle.waitForOutput('keyward worker ready', scaled(timeoutMs)).catch((err) => {
    child.kill('SIGKILL');
    throw err;
  });
  return handle;
}

/** Imports `key` for signing into the tenant and makes it the archive signing key (it signs manifests). */
export async function setArchiveSigningKey(
  app: TestApp,
  ssl: OpenSslDir,
  tenantId: string,
  key: TestKey,
): Promise<void> {
  await importKeystore(app.ctx, tenantId, {
    data: Buffer.concat([ssl.read(key.keyFile), ssl.read(key.certFile)]),
    kid: key.kid,
    usage: 'sign',
  });
  await applySettings(app.ctx, tenantId, key.kid, { archiveSigning: true }, async () => 0);
}

/** A tenant with migration permissions, a workload token and the given keys imported (each for its `usage`, else every usage its certificate allows). */
export async function tenantWithKeys(
  app: TestApp,
  ssl: OpenSslDir,
  keys: Array<TestKey & { usage?: 'sign' | 'encrypt' }>,
): Promise<{ tenantId: string; token: string }> {
  const t = await makeTenant(app, JOB_PERMISSIONS);
  for (const k of keys) {
    await importKeystore(app.ctx, t.tenantId, {
      data: Buffer.concat([ssl.read(k.keyFile), ssl.read(k.certFile)]),
      kid: k.kid,
      usage: k.usage,
    });
  }
  return { tenantId: t.tenantId, token: await workloadToken(app, t) };
}

/** PUTs bytes (or a stream) to the uploads endpoint. */
export async function upload(
  app: TestApp,
  token: string,
  name: string,
  body: Buffer | ReadableStream<Uint8Array>,
) {
  const res = await fetch(`${app.url}/api/v3/migration/uploads/${name}`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/octet-stream' },
    body,
    ...(body instanceof Buffer ? {} : { duplex: 'half' }),
  } as RequestInit);
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

export type JobBody = Record<string, any>;

/** Polls GET /jobs/{id} until `done(view)` or the timeout; answers the last view. */
export async function waitForJob(
  app: TestApp,
  token: string,
  id: string,
  done: (v: JobBody) => boolean,
  timeoutMs = 30_000,
): Promise<JobBody> {
  const deadline = Date.now() + timeoutMs;
  let last: JobBody = {};
  while (Date.now() < deadline) {
    try {
      const r = await api(app, 'GET', `/api/v3/migration/jobs/${id}`, token);
      if (r.status === 200) {
        last = r.body;
        if (done(last)) return last;
      }
    } catch {
      // the API may be briefly unable to answer (e.g. while Redis restarts)
    }
    await sleep(100);
  }
  throw new Error(
    `job ${id} did not reach the expected state within ${timeoutMs} ms; last view: ${JSON.stringify(last).slice(0, 2000)}`,
  );
}

export const finished = (v: JobBody) => ['completed', 'failed', 'cancelled'].includes(v.state);

/** Downloads a job's result. */
export async function result(
  app: TestApp,
  token: string,
  id: string,
): Promise<{ status: number; contentType: string; body: Buffer }> {
  const res = await fetch(`${app.url}/api/v3/migration/jobs/${id}/result`, {
    headers: { authorization: `Bearer ${token}` },
  });
  return {
    status: res.status,
    contentType: res.headers.get('content-type') ?? '',
    body: Buffer.from(await res.arrayBuffer()),
  };
}

/** Runs the `keyward` CLI as a user does (`node bin/keyward.js`, a child process) with `env` added. */
export function runKeywardCli(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(
      process.execPath,
      [fileURLToPath(new URL('../../../bin/keyward.js', import.meta.url)), ...args],
      { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}
