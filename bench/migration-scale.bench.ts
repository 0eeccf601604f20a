/**
 * One durable migration at scale: BENCH_OBJECTS small messages (default 1,000,000; about 2 KB
 * each, half EnvelopedData to an RSA-2048 key, half SignedData by an EC P-256 key, made by
 * openssl) through one migration with two worker processes, the service as `npm start` runs it
 * (DATA_DIR storage, PostgreSQL, Redis). The inputs are written straight into DATA_DIR/objects
 * (uploading a million files through HTTP is not what is measured). Prints objects/s, Redis's
 * peak memory (INFO memory used_memory_peak, of a redis-server of its own started here, so that
 * the figure is the migration's alone), the ledger's row count against the object count, and
 * the ledger's share of the database's active time, sampled from pg_stat_activity every 100 ms.
 *
 * Needs Postgres (BENCH_DATABASE_URL, TEST_DATABASE_URL or 127.0.0.1:5432) and redis-server on
 * PATH. The baseline of the figure is the rate of the same two workers on a first slice
 * (BENCH_OBJECTS / 100, at least 500), run before as its own migration.
 *
 * BENCH_RUNTIME_PHASES=N (default 0) measures the runtime API beside the migration first: N
 * pairs of phases, alternated (ABBA), each BENCH_RUNTIME_SECONDS (default 8) of encrypt 1 KiB
 * under AES-256 on 4 keep-alive connections, once with the migration paused (idle) and once
 * running, on the defaults (no rate limit, workers at WORKER_NICE 10; BENCH_WORKER_NICE sets
 * theirs for comparison). Prints each phase's p50/p99 and the ratio of the migration's p99 to the
 * idle p99 (target <= 2).
 *
 * At the end, the manifest the completing worker stored is checked from outside: its JWS
 * signature with jose against the archive key's published JWK, and its tree root recomputed
 * here from the streamed report (RFC 6962, SHA-256 over the canonical leaf of each line, with a
 * stack of O(log n) subtree roots), so the figure comes with the proof that the ledger holds
 * every object.
 */
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import knexFactory from 'knex';
import { Redis } from 'ioredis';
import { compactVerify, importJWK } from 'jose';
import { cleanEnv, freePort, startChild, type Child } from './lib/process.ts';
import { pgAdmin, startWorker } from './lib/jobs.ts';
import { runLoad, type LoadResult } from './lib/load.ts';
import { TreeHead, reportLineLeaf } from '../support/independent-manifest.ts';
import { printResult } from './lib/result.ts';

const OBJECTS = Number(process.env.BENCH_OBJECTS ?? 1_000_000);
const WARM = Math.max(500, Math.floor(OBJECTS / 100));
const RUNTIME_PHASES = Number(process.env.BENCH_RUNTIME_PHASES ?? 0);
const RUNTIME_SECONDS = Number(process.env.BENCH_RUNTIME_SECONDS ?? 8);
const root = new URL('..', import.meta.url).pathname;
const pgBase =
  process.env.BENCH_DATABASE_URL ??
  process.env.TEST_DATABASE_URL ??
  'postgres://postgres@127.0.0.1:5432/test';
const work = mkdtempSync(join(tmpdir(), 'keyward-migration-bench-'));
const dbName = `kw_bench_${randomBytes(5).toString('hex')}`;
const children: Array<Child | { stop(): Promise<unknown> }> = [];

const ssl = (args: string[]) =>
  execFileSync('openssl', args, { cwd: work, stdio: ['ignore', 'pipe', 'pipe'] });

/** Four small messages: two encrypted, two signed, about 2 KB each. */
function messages(): Buffer[] {
  ssl([
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    'rsa.key',
    '-out',
    'rsa.crt',
    '-subj',
    '/CN=bench-rsa',
    '-days',
    '2',
  ]);
  ssl([
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-keyout',
    'ec.key',
    '-out',
    'ec.crt',
    '-subj',
    '/CN=bench-ec',
    '-days',
    '2',
  ]);
  const out: Buffer[] = [];
  for (let i = 0; i < 2; i++) {
    writeFileSync(join(work, `m${i}.txt`), randomBytes(1100).toString('base64'));
    out.push(
      ssl([
        'cms',
        '-encrypt',
        '-binary',
        '-aes-256-cbc',
        '-in',
        `m${i}.txt`,
        '-recip',
        'rsa.crt',
        '-outform',
        'DER',
      ]),
    );
    out.push(
      ssl([
        'cms',
        '-sign',
        '-nodetach',
        '-binary',
        '-in',
        `m${i}.txt`,
        '-signer',
        'ec.crt',
        '-inkey',
        'ec.key',
        '-outform',
        'DER',
      ]),
    );
  }
  return out;
}

/** A redis-server of the bench's own, without persistence: its peak memory is the migration's. */
async function startRedis(): Promise<{ url: string; stop(): Promise<unknown> }> {
  const port = await freePort();
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: 'ignore' },
  );
  const url = `redis://127.0.0.1:${port}`;
  for (let i = 0; i < 100; i++) {
    const r = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0 });
    // Refused while the server starts: the loop asks again.
    r.on('error', () => undefined);
    try {
      await r.connect();
      await r.ping();
      r.disconnect();
      break;
    } catch {
      r.disconnect();
      await new Promise((res) => setTimeout(res, 100));
    }
  }
  return {
    url,
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve(child.exitCode);
        child.once('exit', resolve);
        child.kill('SIGTERM');
      }),
  };
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

/**
 * The stored manifest checked from outside: jose verifies its JWS with the key the tenant
 * publishes, and the RFC 6962 root of the report's lines is recomputed here, streaming (a stack
 * of perfect subtree roots, merged as leaves arrive, then folded right to left).
 */
async function checkManifest(
  url: string,
  token: string,
  admin: string,
  tenantId: string,
  id: string,
  count: number,
) {
  let manifest: { jws: string; root: string; size: number } | undefined;
  for (let i = 0; i < 100 && !manifest; i++) {
    try {
      manifest = await call(url, 'GET', `/api/v3/migration/migrations/${id}/manifest`, token);
    } catch {
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  if (!manifest) throw new Error('no manifest');
  const header = JSON.parse(Buffer.from(manifest.jws.split('.')[0], 'base64url').toString());
  const key = await call(url, 'GET', `/api/v3/admin/tenants/${tenantId}/keys/bench-archive`, admin);
  const { payload } = await compactVerify(manifest.jws, await importJWK(key.publicKey, header.alg));
  const claims = JSON.parse(Buffer.from(payload).toString());
  const started = performance.now();
  const res = await fetch(`${url}/api/v3/migration/migrations/${id}/report`, {
    headers: { authorization: `Bearer ${token}` },
  });
  const head = new TreeHead();
  let lines = 0;
  let rest = '';
  const leaf = (line: string) => {
    head.push(reportLineLeaf(JSON.parse(line)));
    lines++;
  };
  const decoder = new TextDecoder();
  for await (const chunk of res.body!) {
    const text = rest + decoder.decode(chunk, { stream: true });
    const parts = text.split('\n');
    rest = parts.pop()!;
    for (const line of parts) if (line) leaf(line);
  }
  if (rest) leaf(rest);
  const root = head.root();
  if (lines !== count) throw new Error(`the report has ${lines} lines for ${count} objects`);
  return {
    alg: header.alg as string,
    kid: header.kid as string,
    lines,
    seconds: (performance.now() - started) / 1000,
    root,
    signedRoot: claims.tree.root as string,
    size: claims.tree.size as number,
  };
}

/** Writes `count` inputs under tenants/<tenant>/<prefix>, 1,000 per folder. */
function writeInputs(
  objectsDir: string,
  tenantId: string,
  prefix: string,
  count: number,
  bodies: Buffer[],
) {
  for (let i = 0; i < count; i++) {
    const dir = join(
      objectsDir,
      'tenants',
      tenantId,
      prefix,
      String(Math.floor(i / 1000)).padStart(5, '0'),
    );
    if (i % 1000 === 0) mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, `${String(i).padStart(9, '0')}.p7m`), bodies[i % bodies.length]);
  }
}

const form = (f: Record<string, string>) => new URLSearchParams(f).toString();
let redis: { url: string; stop(): Promise<unknown> } | null = null;
let cleaning: Promise<void> | null = null;
// An interrupted run (a million objects is most of an hour) leaves no worker, API or database.
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.once(signal, () => {
    console.error(`${signal}: stopping the workers, the API and Redis, dropping ${dbName}`);
    void cleanUp().finally(() => process.exit(130));
  });

try {
  const bodies = messages();
  console.log(
    `migration-scale: ${OBJECTS} objects of ${bodies.map((b) => b.length).join('/')} bytes, warm-up slice ${WARM}, Node ${process.version}`,
  );
  redis = await startRedis();
  await pgAdmin(pgBase, `create database ${dbName}`);
  const dbUrl = new URL(pgBase);
  dbUrl.pathname = `/${dbName}`;
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const adminPassword = randomBytes(18).toString('base64url');
  const platformTenant = randomUUID();
  const dataDir = join(work, 'data');
  const shared = {
    DATA_DIR: dataDir,
    DATABASE_URL: dbUrl.toString(),
    REDIS_URL: redis.url,
    KEYWARD_MASTER_KEY: randomBytes(32).toString('base64'),
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
      'migration.jobs.create',
      'migration.jobs.read',
      'migration.jobs.result.read',
      'migration.convert',
      'crypto.decrypt',
      'crypto.encrypt',
      'migration.jobs.cancel',
    ],
  });
  const workload = await call(url, 'POST', `/api/v3/admin/tenants/${tenant.id}/workloads`, admin, {
    name: 'bench',
    roleId: role.id,
  });
  for (const [kid, file] of [
    ['bench-rsa', 'rsa'],
    ['bench-ec', 'ec'],
  ]) {
    const keystore = new FormData();
    keystore.append(
      'keystore',
      new Blob([
        Buffer.concat([
          readFileSync(join(work, `${file}.key`)),
          readFileSync(join(work, `${file}.crt`)),
        ]),
      ]),
      `${file}.pem`,
    );
    keystore.append('kid', kid);
    await call(
      url,
      'POST',
      `/api/v3/admin/tenants/${tenant.id}/keys/import-keystore`,
      admin,
      keystore,
    );
  }
  // The runtime API's key, for the phases that measure it beside the migration.
  await call(url, 'POST', `/api/v3/admin/tenants/${tenant.id}/keys`, admin, {
    kid: 'bench-aes',
    type: 'aes-256',
  });
  // The archive signing key signs the manifest; the migration's own outputs do not change.
  await call(url, 'POST', `/api/v3/admin/tenants/${tenant.id}/keys`, admin, {
    kid: 'bench-archive',
    type: 'ec-p256',
    usage: 'sign',
  });
  await call(url, 'PATCH', `/api/v3/admin/tenants/${tenant.id}/keys/bench-archive`, admin, {
    archiveSigning: true,
  });
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

  const writing = performance.now();
  writeInputs(join(dataDir, 'objects'), tenant.id, 'warm', WARM, bodies);
  writeInputs(join(dataDir, 'objects'), tenant.id, 'in', OBJECTS, bodies);
  console.log(
    `  inputs written (not timed below): ${((performance.now() - writing) / 1000).toFixed(1)} s`,
  );
  for (let i = 0; i < 2; i++)
    children.push(
      await startWorker(
        cleanEnv({
          ...shared,
          WORKER_METRICS_PORT: '0',
          // The default priority unless asked (BENCH_WORKER_NICE=0: the API's, for comparison).
          ...(process.env.BENCH_WORKER_NICE ? { WORKER_NICE: process.env.BENCH_WORKER_NICE } : {}),
        }),
      ),
    );

  const db = knexFactory({ client: 'pg', connection: dbUrl.toString(), pool: { min: 0, max: 2 } });
  const probe = new Redis(redis.url);
  try {
    /** Runs one migration to its end; answers seconds and the sampled database activity. */
    async function migrate(prefix: string, count: number, beside?: (id: string) => Promise<void>) {
      const started = performance.now();
      const m = await call(url, 'POST', '/api/v3/migration/migrations', token, {
        source: { prefix: `${prefix}/` },
        output: { prefix: `out-${prefix}/` },
      });
      if (beside) await beside(m.id);
      let samples = 0;
      let active = 0;
      let ledger = 0;
      const sampler = setInterval(() => {
        void db
          .raw(
            "select query from pg_stat_activity where datname = ? and state = 'active' and pid <> pg_backend_pid()",
            [dbName],
          )
          .then(({ rows }: { rows: { query: string }[] }) => {
            samples++;
            active += rows.length;
            ledger += rows.filter((r) => /migration_objects|migrations/.test(r.query)).length;
          })
          .catch(() => undefined);
      }, 100);
      let lastPrint = 0;
      try {
        for (;;) {
          const v = await call(url, 'GET', `/api/v3/migration/migrations/${m.id}`, token);
          if (Date.now() - lastPrint > 30_000) {
            console.log(
              `  ${prefix}: ${v.counts.converted + v.counts.refused}/${v.counts.listed} ${v.objectsPerSecond} objects/s`,
            );
            lastPrint = Date.now();
          }
          if (v.state === 'completed') {
            if (v.counts.converted !== count)
              throw new Error(
                `migration ${prefix} ended with ${JSON.stringify(v.counts)}; expected ${count} converted`,
              );
            break;
          }
          await new Promise((r) => setTimeout(r, 1000));
        }
      } finally {
        clearInterval(sampler);
      }
      const [{ n }] = (await db('migration_objects')
        .where({ migration_id: m.id })
        .count({ n: '*' })) as { n: string }[];
      return {
        id: m.id as string,
        seconds: (performance.now() - started) / 1000,
        ledgerRows: Number(n),
        samples,
        active,
        ledger,
      };
    }

    const warm = await migrate('warm', WARM);
    const warmRate = WARM / warm.seconds;
    await probe.config('RESETSTAT');
    await probe.call('MEMORY', 'PURGE').catch(() => undefined);
    const baselinePeak = Number(/used_memory_peak:(\d+)/.exec(await probe.info('memory'))![1]);
    const phases: Array<{ running: boolean; result: LoadResult }> = [];
    /** Encrypt on the runtime API, alternately with the migration paused and running. */
    const runtimeBeside = async (id: string) => {
      const encrypt = {
        url: `${url}/api/v3/crypto/encrypt`,
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ kid: 'bench-aes', data: randomBytes(1024).toString('base64') }),
        connections: 4,
        seconds: RUNTIME_SECONDS,
        tool: 'node' as const,
      };
      // Let the workers fill their slots first.
      await new Promise((r) => setTimeout(r, 3000));
      let wasRunning = true;
      for (let i = 0; i < RUNTIME_PHASES * 2; i++) {
        const running = i % 4 === 1 || i % 4 === 2;
        // ABBA: two phases in a row share a state; the migration is paused or resumed on a change.
        if (running !== wasRunning)
          await call(
            url,
            'POST',
            `/api/v3/migration/migrations/${id}/${running ? 'resume' : 'pause'}`,
            token,
          );
        wasRunning = running;
        // Chunks in flight finish, or the workers take new ones, before the clock starts.
        await new Promise((r) => setTimeout(r, 3000));
        const result = await runLoad(encrypt);
        phases.push({ running, result });
        console.log(
          `  runtime, migration ${running ? 'running' : 'paused '}: ${result.requestsPerSecond.toFixed(0)} encrypt/s, p50 ${result.p50Ms.toFixed(2)} ms, p99 ${result.p99Ms.toFixed(2)} ms${result.errors ? `, ${result.errors} errors` : ''}`,
        );
      }
      await call(url, 'POST', `/api/v3/migration/migrations/${id}/resume`, token).catch(
        () => undefined,
      );
    };
    const run = await migrate('in', OBJECTS, RUNTIME_PHASES > 0 ? runtimeBeside : undefined);
    if (phases.length > 0) {
      const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
      const p99 = (running: boolean) =>
        median(phases.filter((p) => p.running === running).map((p) => p.result.p99Ms));
      const ratio = p99(true) / p99(false);
      console.log(
        `  runtime encrypt p99: idle ${p99(false).toFixed(2)} ms, during the migration ${p99(true).toFixed(2)} ms; ratio ${ratio.toFixed(2)} (target <= 2)`,
      );
      printResult({
        name: 'migration-runtime-p99',
        metric: 'encrypt 1 KiB p99 on the runtime API while a migration runs (defaults)',
        value: Number(p99(true).toFixed(2)),
        baseline: 'the same with the migration paused, alternated',
        baselineValue: Number(p99(false).toFixed(2)),
        ratio: Number(ratio.toFixed(3)),
        unit: 'ms',
        target: { op: '<=', value: 2, of: 'ratio' },
        notes: `${RUNTIME_PHASES} pairs of ${RUNTIME_SECONDS} s phases, ABBA, 4 connections, node load generator`,
      });
    }
    const peak = Number(/used_memory_peak:(\d+)/.exec(await probe.info('memory'))![1]);
    const rate = OBJECTS / run.seconds;
    const busy = run.samples > 0 ? run.active / run.samples : 0;
    const share = run.active > 0 ? run.ledger / run.active : 0;
    console.log(
      `  warm-up slice: ${WARM} objects in ${warm.seconds.toFixed(1)} s, ${warmRate.toFixed(1)} objects/s`,
    );
    console.log(
      `  migration:     ${OBJECTS} objects in ${run.seconds.toFixed(1)} s, ${rate.toFixed(1)} objects/s${RUNTIME_PHASES > 0 ? ' (the paused runtime phases included)' : ''}`,
    );
    console.log(
      `  Redis used_memory_peak: ${(peak / 1048576).toFixed(1)} MiB (before the run ${(baselinePeak / 1048576).toFixed(1)} MiB; target < 64 MiB)`,
    );
    console.log(
      `  ledger rows: ${run.ledgerRows} for ${OBJECTS} objects (${run.ledgerRows === OBJECTS ? 'equal' : 'DIFFERENT'})`,
    );
    console.log(
      `  database: ${busy.toFixed(2)} active statements on average; ledger statements ${(share * 100).toFixed(1)}% of the sampled active time (${run.samples} samples)`,
    );
    const checked = await checkManifest(url, token, admin, tenant.id, run.id, OBJECTS);
    console.log(
      `  manifest: signature verified by jose (${checked.alg}, ${checked.kid}); root recomputed from ${checked.lines} report lines in ${checked.seconds.toFixed(1)} s: ${checked.root === checked.signedRoot ? 'equal' : 'DIFFERENT'} (${checked.root.slice(0, 16)}…)`,
    );
    if (checked.root !== checked.signedRoot || checked.size !== OBJECTS)
      throw new Error('the manifest does not state the ledger');
    printResult({
      name: 'migration-scale',
      metric: `one durable migration of ${OBJECTS} ~2 KB messages, 2 worker processes`,
      value: Number(rate.toFixed(1)),
      baseline: `the same workers on a first migration of ${WARM} objects`,
      baselineValue: Number(warmRate.toFixed(1)),
      ratio: Number((rate / warmRate).toFixed(3)),
      unit: 'objects/s',
      notes: `Redis peak ${(peak / 1048576).toFixed(1)} MiB; ledger ${run.ledgerRows}/${OBJECTS}; manifest verified (jose, root recomputed); ledger ${(share * 100).toFixed(1)}% of sampled active database time; storage DATA_DIR`,
    });
  } finally {
    probe.disconnect();
    await db.destroy();
  }
} finally {
  await cleanUp();
}

/**
 * Stops what the bench started and removes its database and files, once: the end of the run
 * and an interruption (SIGINT/SIGTERM) share the one clean-up.
 */
function cleanUp(): Promise<void> {
  cleaning ??= stopEverything();
  return cleaning;
}

async function stopEverything(): Promise<void> {
  await Promise.all(children.map((c) => c.stop().catch(() => undefined)));
  await redis?.stop();
  await pgAdmin(pgBase, `drop database if exists ${dbName} with (force)`).catch((err: Error) =>
    console.error(`could not drop ${dbName}: ${err.message}`),
  );
  rmSync(work, { recursive: true, force: true });
}
