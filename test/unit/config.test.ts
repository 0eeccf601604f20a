import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../../shared/config/index.ts';
import { SCHEMA } from '../../shared/config/schema.ts';
import { queueSettings } from '../../shared/queues/index.ts';
import { sleep } from '../support/time.ts';

const SERVER = new URL('../../api/server.ts', import.meta.url).pathname;
const WORKER = new URL('../../workers/worker.ts', import.meta.url).pathname;

/** Starts a process entry with only `vars` of the schema set; resolves with its exit code and output. */
async function runEntry(
  entry: string,
  vars: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string; dataDir: string }> {
  const dataDir = join(mkdtempSync(join(tmpdir(), 'keyward-config-')), 'data');
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const field of Object.values(SCHEMA)) delete env[field.env];
  const child = spawn(process.execPath, [entry], {
    env: { ...env, DATA_DIR: dataDir, ...vars },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => {
    stdout += c.toString();
  });
  child.stderr.on('data', (c: Buffer) => {
    stderr += c.toString();
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
  clearTimeout(timer);
  return { code, stdout, stderr, dataDir };
}

/** loadConfig's error for an environment, or null when it loads. */
function configErrorOf(env: Record<string, string>): ConfigError | null {
  try {
    loadConfig(env);
    return null;
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
}

describe('configuration', () => {
  it('when nothing is set, then the embedded defaults load and the config is frozen', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      port: 8080,
      host: '127.0.0.1',
      dataDir: './data',
      logLevel: 'info',
      s3Bucket: 'keyward',
    });
    expect(config.databaseUrl).toBeUndefined();
    expect(config.masterKey).toBeUndefined();
    expect(Object.isFrozen(config)).toBe(true);
  });

  it.each([
    ['PORT', { PORT: 'abc' }],
    ['PORT', { PORT: '-1' }],
    ['KEYWARD_MASTER_KEY', { KEYWARD_MASTER_KEY: Buffer.alloc(16, 1).toString('base64') }],
    ['KEYWARD_MASTER_KEY', { KEYWARD_MASTER_KEY: Buffer.alloc(33, 1).toString('base64') }],
    ['LOG_LEVEL', { LOG_LEVEL: 'loud' }],
    ['S3_ACCESS_KEY', { S3_ENDPOINT: 'http://127.0.0.1:9000' }],
    ['S3_SECRET_KEY', { S3_ENDPOINT: 'http://127.0.0.1:9000', S3_ACCESS_KEY: 'minio' }],
    ['DATABASE_URL', { DATABASE_URL: 'not a url' }],
    ['WEB_CONCURRENCY', { WEB_CONCURRENCY: '0' }],
    ['KEYWARD_BOOTSTRAP_ADMIN_EMAIL', { KEYWARD_BOOTSTRAP_ADMIN_PASSWORD: 'long enough password' }],
    [
      'KEYWARD_BOOTSTRAP_ADMIN_PASSWORD',
      { KEYWARD_BOOTSTRAP_ADMIN_EMAIL: 'a@b.c', KEYWARD_BOOTSTRAP_ADMIN_PASSWORD: 'short' },
    ],
    ['JOB_ATTEMPTS', { JOB_ATTEMPTS: 'abc' }],
    ['JOB_ATTEMPTS', { JOB_ATTEMPTS: '0' }],
    ['JOB_LOCK_DURATION_MS', { JOB_LOCK_DURATION_MS: '999' }],
    ['QUEUE_PREFIX', { QUEUE_PREFIX: 'a b' }],
    ['QUEUE_PREFIX', { QUEUE_PREFIX: 'x'.repeat(65) }],
    ['KEYWARD_NODE_FLAGS', { KEYWARD_NODE_FLAGS: 'maybe' }],
  ])('when the value is bad, then a ConfigError names %s', (variable, env) => {
    const err = configErrorOf(env);
    expect(err).toBeInstanceOf(ConfigError);
    expect(err!.message).toContain(variable);
  });

  it('when KEYWARD_MASTER_KEY is base64 of 32 bytes, then it loads as a keyring of that key under its fingerprint id', () => {
    const key = Buffer.alloc(32, 9);
    const ring = loadConfig({ KEYWARD_MASTER_KEY: key.toString('base64') }).masterKey!;
    expect(ring).toHaveLength(1);
    expect(ring[0].key).toEqual(key);
    expect(ring[0].id).toMatch(/^k-[0-9a-f]{8}$/);
  });

  it('when KEYWARD_MASTER_KEY lists id:base64 entries, then they load newest first with their ids', () => {
    const a = Buffer.alloc(32, 1);
    const b = Buffer.alloc(32, 2);
    const ring = loadConfig({
      KEYWARD_MASTER_KEY: `k2:${b.toString('base64')}, k1:${a.toString('base64')}`,
    }).masterKey!;
    expect(ring.map((e) => e.id)).toEqual(['k2', 'k1']);
    expect(ring[1].key).toEqual(a);
  });

  it.each([
    [
      'a repeated id',
      `k1:${Buffer.alloc(32, 1).toString('base64')},k1:${Buffer.alloc(32, 2).toString('base64')}`,
      'appears twice',
    ],
    [
      'a repeated key',
      `k1:${Buffer.alloc(32, 1).toString('base64')},k2:${Buffer.alloc(32, 1).toString('base64')}`,
      'appears twice',
    ],
    ['a short key', `k1:${Buffer.alloc(16, 1).toString('base64')}`, '32 bytes'],
    ['a bad id', `k 1:${Buffer.alloc(32, 1).toString('base64')}`, 'KEYWARD_MASTER_KEY'],
  ])(
    'when KEYWARD_MASTER_KEY has %s, then a ConfigError names the variable',
    (_what, value, text) => {
      const err = configErrorOf({ KEYWARD_MASTER_KEY: value });
      expect(err).toBeInstanceOf(ConfigError);
      expect(err!.message).toContain('KEYWARD_MASTER_KEY');
      expect(err!.message).toContain(text);
    },
  );

  it('when S3_ENDPOINT comes with both keys, then it loads', () => {
    const config = loadConfig({
      S3_ENDPOINT: 'http://127.0.0.1:9000/',
      S3_ACCESS_KEY: 'a',
      S3_SECRET_KEY: 'b',
    });
    expect(config.s3Endpoint).toBe('http://127.0.0.1:9000');
  });

  it('when nothing is set, then the queue settings take their defaults from the same schema', () => {
    expect(queueSettings(loadConfig({}))).toEqual({
      prefix: 'keyward',
      attempts: 5,
      backoffMs: 2000,
      lockDurationMs: 30000,
      stalledIntervalMs: 15000,
      maxStalled: 3,
      retentionSeconds: 604800,
      progressIntervalMs: 500,
      maxBatchObjects: 50000,
    });
    expect(
      queueSettings(loadConfig({ QUEUE_PREFIX: 'kw-test.1', JOB_ATTEMPTS: '2' })),
    ).toMatchObject({ prefix: 'kw-test.1', attempts: 2 });
  });

  it('when a variable is set to the empty string, then its default applies', () => {
    expect(loadConfig({ PORT: '', LOG_LEVEL: '' })).toMatchObject({ port: 8080, logLevel: 'info' });
  });

  it('when node api/server.ts starts with PORT=abc, then it exits non-zero naming PORT and creates nothing', async () => {
    const dataDir = join(mkdtempSync(join(tmpdir(), 'keyward-config-')), 'data');
    const env: NodeJS.ProcessEnv = { ...process.env };
    for (const field of Object.values(SCHEMA)) delete env[field.env];
    try {
      const child = spawn(process.execPath, [SERVER], {
        env: { ...env, PORT: 'abc', DATA_DIR: dataDir },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (c: Buffer) => {
        stdout += c.toString();
      });
      child.stderr.on('data', (c: Buffer) => {
        stderr += c.toString();
      });
      const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
      expect(code).not.toBe(0);
      expect(code).toBe(2);
      expect(stderr).toContain('PORT');
      expect(stderr).toContain('"abc"');
      expect(stdout).not.toContain('bootstrap');
      expect(existsSync(dataDir)).toBe(false);
    } finally {
      rmSync(join(dataDir, '..'), { recursive: true, force: true });
    }
  });

  it('when the API restarts with another KEYWARD_MASTER_KEY than its database was made with, then it exits 2 with one line naming the variable', async () => {
    const dataDir = join(mkdtempSync(join(tmpdir(), 'keyward-config-')), 'data');
    const env: NodeJS.ProcessEnv = { ...process.env };
    for (const field of Object.values(SCHEMA)) delete env[field.env];
    const start = (key: Buffer) => {
      const child = spawn(process.execPath, [SERVER], {
        env: { ...env, PORT: '0', DATA_DIR: dataDir, KEYWARD_MASTER_KEY: key.toString('base64') },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const out = { stdout: '', stderr: '' };
      child.stdout.on('data', (c: Buffer) => {
        out.stdout += c.toString();
      });
      child.stderr.on('data', (c: Buffer) => {
        out.stderr += c.toString();
      });
      return {
        child,
        out,
        closed: new Promise<number | null>((resolve) => child.once('close', resolve)),
      };
    };
    try {
      const first = start(randomBytes(32));
      while (!first.out.stdout.includes('keyward api listening')) {
        if (first.child.exitCode !== null)
          throw new Error(`first start failed: ${first.out.stderr}`);
        await sleep(100);
      }
      first.child.kill('SIGTERM');
      expect(await first.closed).toBe(0);

      const second = start(randomBytes(32));
      expect(await second.closed).toBe(2);
      expect(second.out.stderr).toContain(
        "keyward: invalid configuration: KEYWARD_MASTER_KEY cannot open this database's key material",
      );
      expect(second.out.stderr).not.toContain('    at '); // no stack trace
    } finally {
      rmSync(join(dataDir, '..'), { recursive: true, force: true });
    }
  }, 90_000);

  // Before, the queue variables had a schema of their own that the API read on the first jobs
  // request: a bad JOB_ATTEMPTS passed the start and every jobs request answered 500.
  it.each([
    ['API', 'JOB_ATTEMPTS', 'abc', SERVER],
    ['API', 'QUEUE_PREFIX', 'no spaces', SERVER],
    ['worker', 'JOB_ATTEMPTS', 'abc', WORKER],
    ['worker', 'JOB_BACKOFF_MS', '-5', WORKER],
  ])(
    'when the %s starts with %s=%j, then it exits 2 naming the variable before opening anything',
    async (_name, variable, value, entry) => {
      const run = await runEntry(entry, {
        PORT: '0',
        [variable]: value,
        REDIS_URL: 'redis://127.0.0.1:1',
        DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none',
      });
      try {
        expect({
          code: run.code,
          named: run.stderr.includes(variable),
          value: run.stderr.includes(`"${value}"`),
        }).toEqual({ code: 2, named: true, value: true });
        expect(run.stderr).toMatch(/invalid configuration/);
        expect(run.stderr).not.toContain('    at ');
        expect(existsSync(run.dataDir)).toBe(false);
      } finally {
        rmSync(join(run.dataDir, '..'), { recursive: true, force: true });
      }
    },
    60_000,
  );
});
