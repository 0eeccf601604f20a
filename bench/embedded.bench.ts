/**
 * The embedded default (PGlite in DATA_DIR) against Postgres, same run: time from spawn to
 * /readyz on a fresh data directory, idle RSS, peak RSS from start through a 1 GiB and a 4 GiB
 * EnvelopedData conversion, and the 1 GiB conversion's ratio against `openssl cms -decrypt`.
 * Targets: embedded ready < 5 s, peak < 250 MB, idle < 150 MB, ratio within 10 % of
 * Postgres's. Inputs are made once under os.tmpdir() and deleted; each database gets a fresh
 * DATA_DIR (and a fresh Postgres database, dropped after). BENCH_EMBEDDED_MIB shrinks the
 * 1 GiB size (the large input is 4x it) for a quick run; BENCH_DATABASE_URL names the Postgres
 * server (default postgres://postgres@127.0.0.1:5432/postgres).
 *
 * Measured on this machine's 2 shared cores while choosing the embedded settings (PGlite 0.5.16;
 * probe: PGlite alone, open plus migrations, RSS one second later; figures vary with load):
 * - PGlite defaults, fresh directory: ready in 6.4-18 s (initdb runs in a second PGlite
 *   instance, so two WASM heaps at once), RSS 1,158-1,194 MB at ready, 383-758 MB idle.
 *   An existing directory: ready 0.5-2.2 s, idle 491-507 MB.
 * - V8 tiering the 9 MB pglite.wasm up to TurboFan is most of the idle RSS: reopen, idle
 *   491 MB by default, 160 MB with --liftoff-only, 208 MB with --no-liftoff (but ready in
 *   5.6 s), 491 MB with --wasm-lazy-compilation, 453 MB with --no-wasm-tier-up. With the
 *   service's malloc settings: 311 MB default, 152 MB --liftoff-only. First start with
 *   --liftoff-only: initdb 6.9 s instead of 10.5 s.
 * - postgres settings passed at start (-c shared_buffers=8MB, wal_buffers=256kB,
 *   temp_buffers=1MB; PGlite's defaults are 160 MB, 5 MB, 10 MB): reopen with --liftoff-only
 *   and the malloc settings, idle 285 MB -> 152 MB.
 * - initialMemory below 128 MiB: refused by the WASM module (its declared minimum is 2048 pages).
 * - initdb in a worker thread (shared/db/pglite.ts), so its second WASM instance goes with the
 *   thread: first start of the service, idle 525 MB (in-process, 16 MiB smoke run of this
 *   bench) -> PGlite alone 207-285 MB right after, against 150-162 MB on a later open.
 * - A template directory (initdb's output, kept once per user and PGlite version, copied for a
 *   new DATA_DIR): PGlite open 16.4 s (initdb, load average 7.6) -> 2.1 s; in this bench at load
 *   average 12, "embedded database open" 22.6 s without a template, 2.4 s with one.
 * - 2026-11-25, in process (PGlite in the API): idle 187 MB against 122 MB on Postgres; smaps of
 *   the idle API: 94 MB anonymous against 48 MB; --wasm-lazy-compilation or --no-wasm-tier-up on
 *   top of --liftoff-only: 2 MB less. A 256 MiB conversion 1.48 s against 1.16 s on Postgres
 *   (every query of a request ran in WASM on the event loop that streams the conversion).
 * - Chosen: PGlite in a process of its own (shared/db/embedded.ts) behind a Unix socket and the
 *   pg client: API idle 121 MB (Postgres 120), peak 164 MB through 1 and 4 GiB (Postgres 172),
 *   the database process 125 MB; 1 GiB / openssl 0.316 against 0.380 on Postgres. Fresh clone
 *   after npm install (template and compile cache made by scripts/first-start.ts): ready 1.54 s;
 *   with nothing prepared 4.49 s (load average about 2).
 * The figures of the full bench are in bench/results.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import knexFactory from 'knex';
import { platformAdmin, startKeyward } from './lib/keyward.ts';
import { printResult, type BenchTarget } from './lib/result.ts';
import {
  convertOverHttp,
  decryptArgs,
  envelop,
  freeBytes,
  importKey,
  makeRsaCert,
  procMb,
  randomFile,
  rssNow,
  rssSampler,
  timedOpenssl,
} from './lib/cms.ts';

const MiB = 1024 * 1024;
const SMALL = Number(process.env.BENCH_EMBEDDED_MIB ?? 1024) * MiB;
const LARGE = 4 * SMALL;
const PG_SERVER = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const work = mkdtempSync(join(tmpdir(), 'keyward-embedded-bench-'));
const fmt = (n: number, d = 2) => n.toFixed(d);
const label = (bytes: number) =>
  bytes >= 1024 * MiB ? `${bytes / 1024 / MiB} GiB` : `${bytes / MiB} MiB`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs one statement on the Postgres server (create or drop the bench database). */
async function pgAdmin(sql: string): Promise<void> {
  const k = knexFactory({ client: 'pg', connection: PG_SERVER, pool: { min: 0, max: 1 } });
  try {
    await k.raw(sql);
  } finally {
    await k.destroy();
  }
}

interface Figures {
  database: string;
  readySeconds: number;
  idleMb: number;
  /** Peak RSS since the process started (VmHWM), through both conversions. */
  peakMb: number;
  /** The embedded database's own process (shared/db/embedded.ts); 0 on Postgres. */
  dbIdleMb: number;
  dbPeakMb: number;
  smallSeconds: number;
  largeSeconds: number;
  opensslSeconds: number;
  ratio: number;
}

/** The embedded database's process among the API's children (shared/db/pglite-server.ts). */
function databaseChild(pid: number): number | null {
  const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/);
  for (const child of children.filter(Boolean)) {
    try {
      if (readFileSync(`/proc/${child}/cmdline`, 'utf8').includes('pglite-server'))
        return Number(child);
    } catch {
      // gone
    }
  }
  return null;
}

/** Starts the service on `env`, converts both inputs, and returns its figures. */
async function measure(
  database: string,
  env: Record<string, string>,
  pem: Buffer,
  inputs: { small: string; large: string } | null,
): Promise<Figures> {
  const t0 = performance.now();
  const keyward = await startKeyward(env);
  const readySeconds = (performance.now() - t0) / 1000;
  try {
    const pid = keyward.child.process.pid!;
    await sleep(3000);
    const idleMb = rssNow(pid);
    const dbPid = databaseChild(pid);
    const dbIdleMb = dbPid ? rssNow(dbPid) : 0;
    const dbPeak = () => (dbPid ? procMb(dbPid, 'VmHWM') : 0);
    const steps = () =>
      keyward.child
        .output()
        .split('\n')
        .filter((l) => l.includes('"startup"'))
        .map((l) => JSON.parse(l) as { msg: string; ms?: number })
        .map((l) => `${l.msg}${l.ms === undefined ? '' : ` ${l.ms} ms`}`)
        .join('; ');
    console.log(`  ${database} start-up steps: ${steps() || '(none logged)'}`);
    if (!inputs) {
      const none = Number.NaN;
      const peakMb = procMb(pid, 'VmHWM');
      return {
        database,
        readySeconds,
        idleMb,
        peakMb,
        dbIdleMb,
        dbPeakMb: dbPeak(),
        smallSeconds: none,
        largeSeconds: none,
        opensslSeconds: none,
        ratio: none,
      };
    }
    const { tenantId, token: admin } = await platformAdmin(keyward);
    await importKey(keyward.url, admin, tenantId, pem, 'bench-rsa', 'encrypt');
    const convert = async (file: string, bytes: number) => {
      const sampler = rssSampler(pid);
      const r = await convertOverHttp(keyward.url, admin, file);
      const peak = sampler.stop();
      if (r.status !== 200)
        throw new Error(`${database} ${label(bytes)}: HTTP ${r.status} ${r.head.toString()}`);
      console.log(
        `  ${database} ${label(bytes)}: ${fmt(r.seconds)} s, ${fmt(bytes / 1e6 / r.seconds, 0)} MB/s, RSS peak during ${fmt(peak, 0)} MB`,
      );
      return r.seconds;
    };
    const openssl = await timedOpenssl(work, decryptArgs(inputs.small));
    const smallSeconds = await convert(inputs.small, SMALL);
    const largeSeconds = await convert(inputs.large, LARGE);
    const peakMb = procMb(pid, 'VmHWM');
    return {
      database,
      readySeconds,
      idleMb,
      peakMb,
      dbIdleMb,
      dbPeakMb: dbPeak(),
      smallSeconds,
      largeSeconds,
      opensslSeconds: openssl.seconds,
      ratio: smallSeconds / openssl.seconds,
    };
  } finally {
    await keyward.stop();
  }
}

try {
  const need = SMALL + LARGE + 512 * MiB;
  console.log(
    `embedded: ${label(SMALL)} and ${label(LARGE)} EnvelopedData, Node ${process.version}, load average ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
  );
  if (freeBytes(work) < need)
    throw new Error(`needs ${fmt(need / 2 ** 30, 1)} GiB free under ${tmpdir()}`);
  const pem = makeRsaCert(work);
  const inputs = { small: join(work, 'small.der'), large: join(work, 'large.der') };
  for (const [file, bytes] of [
    [inputs.small, SMALL],
    [inputs.large, LARGE],
  ] as const) {
    randomFile(join(work, 'plain.bin'), bytes);
    envelop(work, 'plain.bin', file);
    rmSync(join(work, 'plain.bin'));
  }

  // A machine's first start: either nothing prepared (no PGlite template, no compile cache; both
  // live under TMPDIR), or what `npm install` prepares (its postinstall, scripts/first-start.ts).
  const firstStart = async (withTemplate: boolean) => {
    const freshTmp = mkdtempSync(join(tmpdir(), 'keyward-embedded-tmpdir-'));
    try {
      let templateSeconds = 0;
      if (withTemplate) {
        const t0 = performance.now();
        execFileSync(process.execPath, [join(import.meta.dirname, '../scripts/first-start.ts')], {
          env: { ...process.env, TMPDIR: freshTmp },
          stdio: 'ignore',
        });
        templateSeconds = (performance.now() - t0) / 1000;
      }
      const name = withTemplate
        ? 'embedded, fresh clone after npm install'
        : 'embedded, no template';
      return { templateSeconds, ...(await measure(name, { TMPDIR: freshTmp }, pem, null)) };
    } finally {
      rmSync(freshTmp, { recursive: true, force: true });
    }
  };
  const cold = await firstStart(false);
  const clone = await firstStart(true);
  // Makes this user's template when it is missing, so the figures below are those of any first
  // start with a fresh DATA_DIR after the machine's first.
  await measure('embedded, warm-up', {}, pem, null);
  const embedded = await measure('embedded', {}, pem, inputs);
  const dbName = `kw_bench_embedded_${randomBytes(4).toString('hex')}`;
  await pgAdmin(`CREATE DATABASE ${dbName}`);
  let postgres: Figures;
  try {
    const url = Object.assign(new URL(PG_SERVER), { pathname: `/${dbName}` }).href;
    postgres = await measure('postgres', { DATABASE_URL: url }, pem, inputs);
  } finally {
    await pgAdmin(`DROP DATABASE IF EXISTS ${dbName}`).catch((err: Error) =>
      console.error(`could not drop ${dbName}: ${err.message}`),
    );
  }

  console.log(
    `embedded on a new machine (no template, no compile cache): ready ${fmt(cold.readySeconds)} s, idle ${fmt(cold.idleMb, 0)} MB, peak ${fmt(cold.peakMb, 0)} MB; database process idle ${fmt(cold.dbIdleMb, 0)} MB, peak ${fmt(cold.dbPeakMb, 0)} MB`,
  );
  console.log(
    `embedded on a fresh clone (npm install's template and compile cache, made in ${fmt(clone.templateSeconds)} s): ready ${fmt(clone.readySeconds)} s, idle ${fmt(clone.idleMb, 0)} MB, peak ${fmt(clone.peakMb, 0)} MB; database process idle ${fmt(clone.dbIdleMb, 0)} MB, peak ${fmt(clone.dbPeakMb, 0)} MB`,
  );
  for (const f of [embedded, postgres])
    console.log(
      `${f.database}: ready ${fmt(f.readySeconds)} s, idle ${fmt(f.idleMb, 0)} MB (database process ${fmt(f.dbIdleMb, 0)} MB), peak ${fmt(f.peakMb, 0)} MB (database process ${fmt(f.dbPeakMb, 0)} MB) from start through ${label(SMALL)} and ${label(LARGE)}, ${label(SMALL)} ${fmt(f.smallSeconds)} s vs openssl ${fmt(f.opensslSeconds)} s (ratio ${fmt(f.ratio, 3)}), ${label(LARGE)} ${fmt(f.largeSeconds)} s`,
    );
  const figure = (
    metric: string,
    unit: string,
    pick: (f: Figures) => number,
    notes: string,
    target?: BenchTarget,
  ) =>
    printResult({
      name: 'embedded',
      metric,
      value: Number(fmt(pick(embedded), 3)),
      baseline: 'the same on Postgres, same run',
      baselineValue: Number(fmt(pick(postgres), 3)),
      ratio: Number(fmt(pick(embedded) / pick(postgres), 3)),
      unit,
      notes,
      ...(target ? { target } : {}),
    });
  figure(
    'first start to /readyz, fresh DATA_DIR',
    's',
    (f) => f.readySeconds,
    `a fresh clone after npm install (its template and compile cache) ${fmt(clone.readySeconds)} s; with no template at all ${fmt(cold.readySeconds)} s`,
    { op: '<', value: 5, of: 'value', issue: 15 },
  );
  figure('idle RSS after start', 'MB', (f) => f.idleMb, 'the API process', {
    op: '<',
    value: 150,
    of: 'value',
    issue: 15,
  });
  figure(
    'idle RSS after start, API and embedded database processes together',
    'MB',
    (f) => f.idleMb + f.dbIdleMb,
    `the database process alone: ${fmt(embedded.dbIdleMb, 0)} MB idle, ${fmt(embedded.dbPeakMb, 0)} MB peak`,
  );
  figure(
    `peak RSS from start through ${label(SMALL)} and ${label(LARGE)} conversions`,
    'MB',
    (f) => f.peakMb,
    'the API process',
    { op: '<', value: 250, of: 'value', issue: 15 },
  );
  figure(
    `${label(SMALL)} EnvelopedData conversion / openssl cms -decrypt`,
    'x',
    (f) => f.ratio,
    `within 10 % of Postgres; ${label(LARGE)}: ${fmt(embedded.largeSeconds)} s vs ${fmt(postgres.largeSeconds)} s`,
    { op: '<=', value: 1.1, of: 'ratio', issue: 15 },
  );
} finally {
  if (existsSync(work)) rmSync(work, { recursive: true, force: true });
}
