/**
 * Small messages: a mailbox of BENCH_MESSAGES S/MIME messages (default 10,000; 60 % encrypted
 * to one RSA-2048 recipient with AES-256-CBC, 20 % clear-signed multipart/signed RSA-2048
 * SHA-256, 20 % signed then encrypted to two recipients; 5-200 KB around a 30 KB median, made by
 * `openssl cms` and cached under the temp dir, bench/lib/mailbox.ts) converted four ways, each
 * against the per-message cryptographic floor, and posted to a bare HTTP floor:
 *
 *   floor   this process, one message after another, only the cryptography each message cannot
 *           avoid on buffers of its sizes (RSA PKCS#1 v1.5 unwrap, AES-256-CBC decrypt, AES-256-GCM
 *           encrypt, RSA-OAEP-256 wrap; SHA-256 of the content, the RSA check of the signed
 *           attributes, the RS256 JWS over header and content), no parsing
 *   engine  convertPkcs7ToJose in this process (the call the convert route makes under it), one
 *           message at a time, the keys held in memory, the answer read to its end
 *   http    POST /api/v3/migration/stream/convert-pkcs7-to-jose, 4 requests in flight (fetch),
 *           the API on its defaults with the keys imported through import-keystore
 *   stored  the floor plus the object-store work no queued conversion skips (put and get of the
 *           input, put and get of one output of its size) on the local store, one thread: two
 *           cores' worth of its CPU per message bounds the queue
 *   bare    the same client and form, 4 in flight, to a bare node:http server of its own process
 *           that reads each request whole, does that message's floor and answers as many bytes
 *           (bench/lib/mailbox-bare-server.ts): the most any HTTP service reaches here
 *   queue   `keyward migrate <folder> --out <dir> --cleanup --poll 100` (upload, one durable
 *           migration converting the folder in chunks,
 *           download, storage emptied) with two `npm run worker` processes on the embedded
 *           database, and again on Postgres when BENCH_DATABASE_URL is set
 *
 * The mailbox is cut into BENCH_ROUNDS slices (default 3); each round runs every way over its
 * slice, one after another (floor, engine, http, queue, ...), and within a way each kind apart, so
 * the load a shared machine drifts through falls on all of them. A kind's rate is its files over
 * its seconds summed over the rounds; the mix is every file over every second. CPU per message is
 * read from /proc: the API with its children (the embedded database), the two workers.
 * Targets: engine >= 0.7 of the floor per kind and for the mix, HTTP >= 1.0 and the queue with
 * two workers >= 1.2 of the floor for the mix (both use more than one core).
 *
 * BENCH_PATHS (default floor,engine,stored,bare,http,queue) names the ways to run: `floor,engine` needs no
 * API, workers or Redis. BENCH_KEYWARD_ROOT runs the engine and the API from another checkout
 * (with its own node_modules), to compare code before and after a change in one sitting.
 *
 * Needs Redis for the queue (REDIS_URL, default 127.0.0.1:6379; the run's keys under a queue
 * prefix of its own, removed after). BENCH_TIMEOUT_S (default 1800) bounds each CLI run.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  linkSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
} from 'node:fs';
import { readFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { JOB_PERMISSIONS } from '../support/job-permissions.ts';
import { importKey, treeCpuSeconds } from './lib/cms.ts';
import { dropQueueKeys, pgAdmin, pool, startWorker } from './lib/jobs.ts';
import { adminToken, provision, startKeyward } from './lib/keyward.ts';
import { KINDS, cryptoFloor, mailbox, type Floor, type Kind, type Message } from './lib/mailbox.ts';
import { FsObjectStore } from '../shared/storage/index.ts';
import { cleanEnv, freePort, startChild, type Child } from './lib/process.ts';
import type * as Engine from '../shared/pkcs7/index.ts';
import type * as Fixtures from '../support/fixtures/pkcs7.ts';
import { printResult } from './lib/result.ts';

const COUNT = Number(process.env.BENCH_MESSAGES ?? 10_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const SEED = 30;
const IN_FLIGHT = 4;
const CLI_TIMEOUT_MS = Number(process.env.BENCH_TIMEOUT_S ?? 1800) * 1000;
const PG = process.env.BENCH_DATABASE_URL;
const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const root = new URL('..', import.meta.url).pathname;
const ALL_PATHS = ['floor', 'engine', 'stored', 'bare', 'http', 'queue'];
const PATHS = new Set(
  (process.env.BENCH_PATHS ?? ALL_PATHS.join(',')).split(',').map((p) => p.trim()),
);
for (const p of PATHS)
  if (!ALL_PATHS.includes(p))
    throw new Error(`BENCH_PATHS: ${p} is none of ${ALL_PATHS.join(', ')}`);
if (!PATHS.has('floor'))
  throw new Error('BENCH_PATHS: every ratio is to the floor, which must run');
const KEYWARD_ROOT = process.env.BENCH_KEYWARD_ROOT ?? root;
// The engine under test: this checkout's, or another's.
const { convertPkcs7ToJose } = (await import(
  join(KEYWARD_ROOT, 'shared/pkcs7/index.ts')
)) as typeof Engine;
// A checkout from before support/ keeps its fixtures under test/.
const fixtures = ['support/fixtures/pkcs7.ts', 'test/fixtures/pkcs7.ts']
  .map((p) => join(KEYWARD_ROOT, p))
  .find((p) => existsSync(p));
const { resolverFor } = (await import(fixtures ?? '')) as typeof Fixtures;
const work = mkdtempSync(join(tmpdir(), 'keyward-mailbox-bench-'));
const stoppers: Array<() => Promise<unknown>> = [];
const clis = new Set<ChildProcess>();
const load = () =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');
const slug = (kind: Kind) => kind.replace('+', '-');

/** An API and its two workers, with a tenant holding the recipient and the signer. */
interface Stack {
  label: string;
  url: string;
  token: string;
  clientId: string;
  clientSecret: string;
  apiPid: number;
  workerPids: number[];
}

/** One way of converting, run over a group of messages of one kind. */
interface Way {
  name: string;
  label: string;
  /** Converts the group; `bytes` holds the files, read before the clock starts, when `reads`. */
  run(group: Message[], round: number, bytes: Buffer[]): Promise<void>;
  reads?: true;
  /** CPU seconds now: the API (or this process, for the in-process ways) and the workers. */
  cpu?(): { api: number; workers: number };
}

async function startStack(label: string, env: Record<string, string>): Promise<Stack> {
  const queuePrefix = `kwbench-mailbox-${randomBytes(3).toString('hex')}`;
  stoppers.push(() => dropQueueKeys(redisUrl, queuePrefix));
  const shared = {
    DATA_DIR: join(work, `data-${label}`),
    REDIS_URL: redisUrl,
    QUEUE_PREFIX: queuePrefix,
    KEYWARD_MASTER_KEY: randomBytes(32).toString('base64'),
    ...env,
  };
  const keyward = await startKeyward(shared, KEYWARD_ROOT);
  stoppers.push(() => keyward.stop());
  const workerPids: number[] = [];
  for (let i = 0; i < 2; i++) {
    // The default metrics port is one per machine; two workers (and other benches) share it.
    const w = await startWorker(cleanEnv({ ...shared, WORKER_METRICS_PORT: '0' }));
    stoppers.push(() => w.stop());
    workerPids.push(w.pid);
  }
  const tenant = await provision(keyward, JOB_PERMISSIONS, []);
  const admin = await adminToken(keyward);
  for (const [key, usage] of [
    [box.keys.recipient, 'encrypt'],
    [box.keys.signer, 'sign'],
  ] as const)
    await importKey(
      keyward.url,
      admin,
      tenant.tenantId,
      Buffer.concat([await readFile(key.keyFile), await readFile(key.certFile)]),
      key.kid,
      usage,
    );
  return {
    label,
    url: keyward.url,
    token: tenant.token,
    clientId: tenant.clientId,
    clientSecret: tenant.clientSecret,
    apiPid: keyward.child.process.pid!,
    workerPids,
  };
}

const read = (group: Message[]) =>
  Promise.all(group.map((m) => readFile(join(box.mailDir, m.name))));

async function engineRun(buffers: Buffer[]): Promise<void> {
  const resolver = resolverFor([box.keys.recipient, box.keys.signer]);
  for (const buf of buffers) {
    const result = await convertPkcs7ToJose(
      (async function* () {
        yield buf;
      })(),
      { metadata: {}, resolver },
    );
    let bytes = 0;
    for await (const chunk of result.body) bytes += chunk.length;
    if (bytes === 0) throw new Error('engine: an empty answer');
  }
}

/** The local object store the service uses by default (fsync before a put is visible). */
const objects = new FsObjectStore({ root: join(work, 'stored-floor') });
await objects.init();

async function* once(b: Buffer): AsyncGenerator<Buffer> {
  yield b;
}

async function readObject(key: string): Promise<number> {
  let n = 0;
  for await (const c of await objects.get(key)) n += (c as Buffer).length;
  return n;
}

/**
 * The floor with the storage no queued conversion can skip, one message after another: the
 * upload's put and the worker's get of the input, the worker's put and the download's get of one
 * output of the input's size (a SignedData writes two), and each message's floor in between.
 */
async function storedRun(group: Message[], bytes: Buffer[], floor: Floor): Promise<void> {
  for (const [i, m] of group.entries()) {
    await objects.put(`in/${m.name}`, once(bytes[i]));
    if ((await readObject(`in/${m.name}`)) !== m.bytes) throw new Error('stored: short read');
    floor.one(m);
    await objects.put(`out/${m.name}`, once(bytes[i]));
    await readObject(`out/${m.name}`);
  }
}

/** Posts each message as the convert endpoint's form, IN_FLIGHT at once, to `target`. */
async function httpRun(
  target: string,
  headersOf: (m: Message) => Record<string, string>,
  group: Message[],
  bytes: Buffer[],
): Promise<void> {
  const blobs = bytes.map((b) => new Blob([new Uint8Array(b)]));
  await pool(
    blobs.map((blob, i) => ({ blob, m: group[i], name: group[i].name })),
    IN_FLIGHT,
    async ({ blob, m, name }) => {
      const body = new FormData();
      body.append('metadata', '{}');
      body.append('file', blob, name);
      const res = await fetch(target, { method: 'POST', headers: headersOf(m), body });
      const out = await res.arrayBuffer();
      if (res.status !== 200 || out.byteLength === 0)
        throw new Error(
          `convert ${name}: ${res.status} ${Buffer.from(out).toString().slice(0, 300)}`,
        );
    },
  );
}

/** Runs `keyward migrate` as a user does, killed past CLI_TIMEOUT_MS. */
function runCli(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(root, 'bin/keyward.js'), ...args], {
      env: cleanEnv(env),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    clis.add(child);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr = (stderr + c.toString()).slice(-20_000)));
    const timer = setTimeout(() => {
      stderr += `\n(bench: killed after ${CLI_TIMEOUT_MS / 1000} s)\n`;
      child.kill('SIGKILL');
    }, CLI_TIMEOUT_MS);
    child.once('close', (code) => {
      clearTimeout(timer);
      clis.delete(child);
      resolve({ code, stdout, stderr });
    });
  });
}

/** The group as a folder of its own (hard links into the cache), migrated and checked. */
async function queueRun(stack: Stack, group: Message[], tag: string): Promise<void> {
  const src = join(work, `in-${stack.label}-${tag}`);
  const out = join(work, `out-${stack.label}-${tag}`);
  mkdirSync(src);
  for (const m of group) {
    try {
      linkSync(join(box.mailDir, m.name), join(src, m.name));
    } catch {
      copyFileSync(join(box.mailDir, m.name), join(src, m.name));
    }
  }
  try {
    const cli = await runCli(
      [
        'migrate',
        src,
        '--out',
        out,
        '--cleanup',
        '--remote-prefix',
        `mailbox/${tag}/`,
        '--poll',
        '100',
      ],
      {
        KEYWARD_URL: stack.url,
        KEYWARD_CLIENT_ID: stack.clientId,
        KEYWARD_CLIENT_SECRET: stack.clientSecret,
      },
    );
    if (cli.code !== 0)
      throw new Error(`keyward migrate exited ${cli.code}:\n${cli.stderr.slice(-3000)}`);
    const outputs = readdirSync(out, { recursive: true, encoding: 'utf8' }).filter(
      (f) => f.endsWith('.jwe') || f.endsWith('.jws.json'),
    );
    if (outputs.length !== group.length)
      throw new Error(
        `keyward migrate wrote ${outputs.length} outputs for ${group.length} files: ${cli.stdout.slice(-1000)}`,
      );
  } finally {
    rmSync(src, { recursive: true, force: true });
    rmSync(out, { recursive: true, force: true });
  }
}

const queueWay = (stack: Stack, name: string, label: string): Way => ({
  name,
  label,
  run: (group, round) => queueRun(stack, group, `r${round}-${slug(group[0].kind)}`),
  cpu: () => ({
    api: treeCpuSeconds(stack.apiPid),
    workers: stack.workerPids.reduce((a, p) => a + treeCpuSeconds(p), 0),
  }),
});

/** This process's CPU seconds, counted in the `api` column for the in-process ways. */
const ownCpu = () => {
  const { user, system } = process.cpuUsage();
  return { api: (user + system) / 1e6, workers: 0 };
};

/** Seconds, files and CPU seconds per kind, summed over the rounds. */
type Tally = Record<Kind, { files: number; seconds: number; api: number; workers: number }>;
const emptyTally = (): Tally =>
  Object.fromEntries(KINDS.map((k) => [k, { files: 0, seconds: 0, api: 0, workers: 0 }])) as Tally;

/** files/s of one kind, or of the mix (`'mix'`: every file over every second). */
function rate(t: Tally, kind: Kind | 'mix'): number {
  const rows = kind === 'mix' ? Object.values(t) : [t[kind]];
  return rows.reduce((a, r) => a + r.files, 0) / rows.reduce((a, r) => a + r.seconds, 0);
}

function cpuPerMessage(t: Tally): { api: number; workers: number } {
  const rows = Object.values(t);
  const files = rows.reduce((a, r) => a + r.files, 0);
  return {
    api: (rows.reduce((a, r) => a + r.api, 0) / files) * 1000,
    workers: (rows.reduce((a, r) => a + r.workers, 0) / files) * 1000,
  };
}

let cleaning: Promise<void> | null = null;
function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    for (const cli of clis) cli.kill('SIGKILL');
    for (const stop of stoppers.reverse())
      await stop().catch((err: Error) => console.error(`cleanup: ${err.message}`));
    rmSync(work, { recursive: true, force: true });
  })();
  return cleaning;
}
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.once(signal, () => {
    console.error(`mailbox: ${signal}, stopping what the bench started`);
    void cleanup().finally(() => process.exit(130));
  });

const box = await mailbox(COUNT, SEED, (line) => console.log(line)).catch(async (err: unknown) => {
  await cleanup();
  throw err;
});
try {
  const { messages } = box;
  const mb = (n: number) => (n / 1e6).toFixed(1);
  console.log(
    `mailbox: ${messages.length} messages, ways ${[...PATHS].join(',')}, code from ${KEYWARD_ROOT}, ${mb(messages.reduce((a, m) => a + m.bytes, 0))} MB, ${box.generatedSeconds === null ? `from the cache ${box.cacheDir}` : `generated in ${box.generatedSeconds.toFixed(1)} s into ${box.cacheDir}`}; ${ROUNDS} rounds; Node ${process.version}; load average ${load()}`,
  );
  for (const kind of KINDS) {
    const of = messages.filter((m) => m.kind === kind).map((m) => m.bytes);
    const sorted = [...of].sort((a, b) => a - b);
    console.log(
      `  ${kind.padEnd(17)} ${String(of.length).padStart(6)} messages, ${mb(of.reduce((a, b) => a + b, 0))} MB, ${sorted[0]} to ${sorted[sorted.length - 1]} bytes, median ${sorted[Math.floor(sorted.length / 2)]}`,
    );
  }

  const stacks: Stack[] = [];
  const served = PATHS.has('http') || PATHS.has('queue');
  if (served) stacks.push(await startStack('embedded', {}));
  const embedded = stacks[0];
  if (PG && PATHS.has('queue')) {
    const dbName = `kw_bench_mailbox_${randomBytes(4).toString('hex')}`;
    await pgAdmin(PG, `create database ${dbName}`);
    stoppers.push(() => pgAdmin(PG, `drop database if exists ${dbName} with (force)`));
    stacks.push(
      await startStack('postgres', {
        DATABASE_URL: Object.assign(new URL(PG), { pathname: `/${dbName}` }).href,
      }),
    );
  } else if (PATHS.has('queue'))
    console.log('  queue on Postgres: skipped (set BENCH_DATABASE_URL to run it)');

  let bare: { url: string; child: Child } | null = null;
  if (PATHS.has('bare')) {
    const port = await freePort();
    const child = await startChild(
      [join(root, 'bench/lib/mailbox-bare-server.ts'), String(port), String(COUNT), String(SEED)],
      cleanEnv(),
      `http://127.0.0.1:${port}/`,
    );
    stoppers.push(() => child.stop());
    bare = { url: `http://127.0.0.1:${port}/convert`, child };
  }

  const floor = cryptoFloor(box.keys);
  const allWays: Way[] = [
    {
      name: 'floor',
      label: 'cryptographic floor, 1 thread',
      run: async (group) => {
        for (const m of group) floor.one(m);
      },
      cpu: ownCpu,
    },
    {
      name: 'engine',
      label: 'engine in process, 1 at a time',
      run: (_group, _round, bytes) => engineRun(bytes),
      reads: true,
      cpu: ownCpu,
    },
    {
      name: 'stored',
      label: 'floor + object store, 1 thread',
      run: (group, _round, bytes) => storedRun(group, bytes, floor),
      reads: true,
      cpu: ownCpu,
    },
    {
      name: 'bare',
      label: `bare HTTP floor, ${IN_FLIGHT} in flight`,
      run: (group, _round, bytes) =>
        httpRun(bare!.url, (m) => ({ 'x-message': JSON.stringify(m) }), group, bytes),
      reads: true,
      cpu: () => ({ api: treeCpuSeconds(bare!.child.process.pid!), workers: 0 }),
    },
    {
      name: 'http',
      label: `HTTP convert, ${IN_FLIGHT} in flight`,
      run: (group, _round, bytes) =>
        httpRun(
          `${embedded.url}/api/v3/migration/stream/convert-pkcs7-to-jose`,
          () => ({ authorization: `Bearer ${embedded.token}` }),
          group,
          bytes,
        ),
      reads: true,
      cpu: () => ({ api: treeCpuSeconds(embedded.apiPid), workers: 0 }),
    },
    ...(PATHS.has('queue') ? stacks : []).map((s) =>
      queueWay(
        s,
        s.label === 'embedded' ? 'queue' : 'queue-pg',
        `keyward migrate, 2 workers, ${s.label === 'embedded' ? 'embedded db' : 'Postgres'}`,
      ),
    ),
  ];
  const ways = allWays.filter((w) => PATHS.has(w.name.replace('-pg', '')));

  // Warm-up (JIT, key caches, connections): one message of each kind through every way.
  const warm = KINDS.map((k) => messages.find((m) => m.kind === k)!);
  for (const way of ways)
    for (const m of warm)
      await way.run([m], 0, way.reads ? await read([m]) : []).catch((err: Error) => {
        throw new Error(`warm-up of ${way.name} on ${m.kind} ${m.name}: ${err.message}`);
      });

  const tallies = new Map(ways.map((w) => [w.name, emptyTally()]));
  for (let round = 1; round <= ROUNDS; round++) {
    const slice = messages.slice(
      Math.floor(((round - 1) * messages.length) / ROUNDS),
      Math.floor((round * messages.length) / ROUNDS),
    );
    const parts: string[] = [];
    for (const way of ways) {
      const tally = tallies.get(way.name)!;
      for (const kind of KINDS) {
        const group = slice.filter((m) => m.kind === kind);
        if (group.length === 0) continue;
        const bytes = way.reads ? await read(group) : [];
        const cpu0 = way.cpu?.();
        const t0 = performance.now();
        await way.run(group, round, bytes);
        const seconds = (performance.now() - t0) / 1000;
        const cpu1 = way.cpu?.();
        const row = tally[kind];
        row.files += group.length;
        row.seconds += seconds;
        if (cpu0 && cpu1) {
          row.api += cpu1.api - cpu0.api;
          row.workers += cpu1.workers - cpu0.workers;
        }
      }
      parts.push(`${way.name} ${rate(tally, 'mix').toFixed(1)}`);
    }
    console.log(
      `  round ${round}/${ROUNDS}, ${slice.length} messages; files/s so far: ${parts.join(', ')}; load ${load()}`,
    );
  }

  const floorTally = tallies.get('floor')!;
  const columns = [...KINDS, 'mix'] as const;
  console.log(
    `\n  ${'files/s (ratio to the floor)'.padEnd(44)}${columns.map((c) => c.padStart(20)).join('')}   CPU ms/message`,
  );
  for (const way of ways) {
    const t = tallies.get(way.name)!;
    const cells = columns.map((c) => {
      const r = rate(t, c);
      return `${r.toFixed(1)} (${(r / rate(floorTally, c)).toFixed(2)})`.padStart(20);
    });
    const cpu = cpuPerMessage(t);
    const cpuText =
      way.name === 'floor' || way.name === 'engine' || way.name === 'stored'
        ? `bench ${cpu.api.toFixed(2)}`
        : `${way.name === 'bare' ? 'server' : 'API'} ${cpu.api.toFixed(1)}${way.name.startsWith('queue') ? `, workers ${cpu.workers.toFixed(1)}` : ''}`;
    console.log(`  ${way.label.padEnd(44)}${cells.join('')}   ${cpuText}`);
  }
  console.log(`mailbox: load average ${load()}`);

  const result = (
    way: string,
    kind: Kind | 'mix',
    metric: string,
    target: number | null,
    notes: string,
  ) => {
    const t = tallies.get(way)!;
    const value = rate(t, kind);
    const base = rate(floorTally, kind);
    printResult({
      name: `mailbox-${way}-${kind === 'mix' ? 'mix' : slug(kind)}`,
      metric,
      value: Number(value.toFixed(1)),
      baseline: `per-message cryptographic floor (${kind}), one thread, same run`,
      baselineValue: Number(base.toFixed(1)),
      ratio: Number((value / base).toFixed(3)),
      unit: 'files/s',
      ...(target === null ? {} : { target: { op: '>=', value: target, of: 'ratio' } }),
      notes: `${messages.length} messages (5-200 KB, median 30 KB), ${ROUNDS} rounds alternated; ${notes}; load ${load()}`,
    });
  };
  if (PATHS.has('engine'))
    for (const kind of columns)
      result(
        'engine',
        kind,
        `${kind === 'mix' ? 'the mailbox mix' : `${kind} messages`} converted in process by convertPkcs7ToJose, one at a time`,
        0.7,
        'keys in memory',
      );
  const perKind = (way: string) =>
    KINDS.map((k) => `${k} ${rate(tallies.get(way)!, k).toFixed(1)}`).join(', ');
  if (PATHS.has('stored')) {
    // Two workers on two cores, with nothing else to run: at most two cores' worth of this.
    const cpu = cpuPerMessage(tallies.get('stored')!).api;
    const bound = 2000 / cpu;
    result(
      'stored',
      'mix',
      'the mailbox mix: the floor plus the put and get of each input and of one output, on the local object store, one thread',
      null,
      `files/s ${perKind('stored')}; CPU ${cpu.toFixed(2)} ms/message, so two cores do at most ${bound.toFixed(1)} files/s (${(bound / rate(floorTally, 'mix')).toFixed(2)} of the floor) with no API, client, queue or ledger`,
    );
  }
  if (PATHS.has('bare'))
    result(
      'bare',
      'mix',
      `mailbox mix posted to a bare node:http server doing only each message's floor, ${IN_FLIGHT} in flight`,
      null,
      `files/s ${perKind('bare')}; server CPU ${cpuPerMessage(tallies.get('bare')!).api.toFixed(1)} ms/message; the most an HTTP service reaches with this client on this machine`,
    );
  const httpCpu = PATHS.has('http') ? cpuPerMessage(tallies.get('http')!) : null;
  if (httpCpu)
    result(
      'http',
      'mix',
      `mailbox mix through POST .../convert-pkcs7-to-jose, ${IN_FLIGHT} in flight`,
      1.0,
      `files/s ${perKind('http')}; API CPU ${httpCpu.api.toFixed(1)} ms/message; embedded database, Redis`,
    );
  for (const s of PATHS.has('queue') ? stacks : []) {
    const name = s.label === 'embedded' ? 'queue' : 'queue-pg';
    const cpu = cpuPerMessage(tallies.get(name)!);
    result(
      name,
      'mix',
      `mailbox mix through keyward migrate --cleanup, 2 worker processes, ${s.label === 'embedded' ? 'embedded database' : 'Postgres'}`,
      1.2,
      `files/s ${perKind(name)}; CPU ms/message API ${cpu.api.toFixed(1)}, workers ${cpu.workers.toFixed(1)}; --poll 100, one durable migration in chunks`,
    );
  }
} finally {
  await cleanup();
}
