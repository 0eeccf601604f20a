/**
 * Concurrent PKCS#7/CMS conversions through one API process (issues 16 and 29), same run:
 *
 * 1. Aggregate throughput of four clients each converting the same EnvelopedData at once against
 *    one conversion alone, ABAB (alone, four, alone, four), both pairs reported. Target: four/one
 *    >= 1.0 (MB/s of input over the wall time of the phase): four lose nothing against one on
 *    this 2-core machine, where one conversion and its client already keep most of both cores busy.
 * 2. While the four run, a fifth client's closed loop of `/api/v3/crypto/encrypt` of 1 KiB
 *    (4 keep-alive connections, wrk when installed, bench/lib/load.ts), p50 and p99; target
 *    p99 < 50 ms. The same loop on the otherwise idle server is printed for reference.
 * 3. The server's CPU seconds per GiB of input (/proc/<pid>/stat), one alone and four at once
 *    without the fifth client (its encrypt loop would be counted), so a larger machine's scaling
 *    can be read from it: after the pairs above, C1 A3 C2 (four quiet, alone, four quiet), each
 *    figure the mean of its two phases (A2 A3, C1 C2).
 *
 * The input is `openssl cms -encrypt -binary -aes256 -stream -outform DER` of random bytes to an
 * RSA recipient imported through import-keystore, 256 MiB by default (BENCH_CONCURRENT_MIB for a
 * smoke run). Each conversion is streamed from disk by curl and its answer written to /dev/null
 * (bench/lib/cms.ts convertDiscarding), so the clients cost as little of the 2 cores as can be;
 * one answer before the phases is read and checked whole, the others must match its length.
 * Each phase prints the share of the machine's two cores busy (/proc/stat), clients included.
 *
 * The server runs on `npm start`'s defaults (access log at info) but on Postgres, a fresh database
 * on BENCH_DATABASE_URL's server (default postgres://postgres@127.0.0.1:5432/test): the production
 * set-up, whose idle process is ~120 MB, where the embedded PGlite's WASM would add its own CPU and
 * memory to what is measured.
 * BENCH_SERVER_ENV ("NAME=value NAME=value") adds server variables, for trying settings.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { pgAdmin } from './lib/jobs.ts';
import { platformAdmin, provision, startKeyward } from './lib/keyward.ts';
import { printResult } from './lib/result.ts';
import { runLoad, type LoadResult } from './lib/load.ts';
import {
  OPENSSL,
  convertDiscarding,
  convertOverHttp,
  cpuSeconds,
  envelop,
  importKey,
  makeRsaCert,
  randomFile,
  rssSampler,
} from './lib/cms.ts';

const MiB = 1024 * 1024;
const SIZE = Number(process.env.BENCH_CONCURRENT_MIB ?? 256) * MiB;
const CLIENTS = 4;
const PG = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const SERVER_ENV = Object.fromEntries(
  (process.env.BENCH_SERVER_ENV ?? '')
    .split(/\s+/)
    .filter(Boolean)
    .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
);
const work = mkdtempSync('/tmp/keyward-pkcs7-concurrent-bench-');
const dbName = `kw_bench_conc_${randomBytes(4).toString('hex')}`;
const fmt = (n: number, d = 2) => n.toFixed(d);
const load = () =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');

/**
 * The answer of the first conversion, checked whole (its closing delimiter); every later answer
 * must be 200 and exactly as long (curl itself fails on a cut one).
 */
let wholeBytes = 0;
function checkWhole(r: { status: number; bytesOut: number }, label: string): void {
  if (r.status !== 200 || r.bytesOut !== wholeBytes)
    throw new Error(
      `${label}: HTTP ${r.status}, ${r.bytesOut} bytes where ${wholeBytes} are whole`,
    );
}

/** Busy and total jiffies of all cores (/proc/stat), for the machine's share busy in a phase. */
function machineTicks(): { busy: number; total: number } {
  const f = readFileSync('/proc/stat', 'utf8')
    .split('\n')[0]
    .trim()
    .split(/\s+/)
    .slice(1)
    .map(Number);
  const idle = f[3] + f[4];
  const total = f.reduce((a, b) => a + b, 0);
  return { busy: total - idle, total };
}

interface Phase {
  seconds: number;
  /** Share of both cores busy (everything on the machine: server, clients, kernel, others). */
  machine: number;
  mbps: number;
  peakMb: number;
  /** Server CPU seconds over the phase, and per GiB of input converted. */
  cpu: number;
  cpuPerGiB: number;
}

try {
  console.log(
    `pkcs7-concurrent: ${fmt(SIZE / MiB, 0)} MiB EnvelopedData, ${CLIENTS} clients, Node ${process.version}, ${execFileSync(OPENSSL, ['version']).toString().trim()}, Postgres, server env ${JSON.stringify(SERVER_ENV)}, load average ${load()}`,
  );
  const pem = makeRsaCert(work);
  randomFile(join(work, 'plain.bin'), SIZE);
  envelop(work, 'plain.bin', 'env.der');
  rmSync(join(work, 'plain.bin'));
  randomFile(join(work, 'warm.bin'), 4 * MiB);
  envelop(work, 'warm.bin', 'warm.der');
  const file = join(work, 'env.der');
  const fileMb = statSync(file).size / 1e6;
  const fileGiB = statSync(file).size / 2 ** 30;

  await pgAdmin(PG, `CREATE DATABASE ${dbName}`);
  const keyward = await startKeyward({
    DATABASE_URL: Object.assign(new URL(PG), { pathname: `/${dbName}` }).href,
    ...SERVER_ENV,
  });
  try {
    const pid = keyward.child.process.pid!;
    const { tenantId, token: admin } = await platformAdmin(keyward);
    await importKey(keyward.url, admin, tenantId, pem, 'bench-rsa', 'encrypt');
    const fifth = await provision(keyward, ['crypto.encrypt'], [{ kid: 'aes', type: 'aes-256' }]);
    const encrypt = (seconds: number, signal?: AbortSignal): Promise<LoadResult> =>
      runLoad({
        url: `${keyward.url}/api/v3/crypto/encrypt`,
        connections: 4,
        seconds,
        method: 'POST',
        headers: { authorization: `Bearer ${fifth.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ kid: 'aes', data: randomBytes(1024).toString('base64') }),
        signal,
      });

    /** `n` clients convert the file at once; the encrypt loop runs while they do when `withLoad`. */
    const phase = async (n: number, withLoad: boolean): Promise<Phase & { enc?: LoadResult }> => {
      const cpu0 = cpuSeconds(pid);
      const m0 = machineTicks();
      const sampler = rssSampler(pid);
      const stop = new AbortController();
      const enc = withLoad ? encrypt(60, stop.signal) : undefined;
      const t0 = performance.now();
      const all = await Promise.all(
        Array.from({ length: n }, () => convertDiscarding(keyward.url, admin, file)),
      );
      const seconds = (performance.now() - t0) / 1000;
      stop.abort();
      const encResult = await enc;
      const peakMb = sampler.stop();
      const m1 = machineTicks();
      all.forEach((r, i) => checkWhole(r, `client ${i + 1} of ${n}`));
      return {
        seconds,
        machine: (m1.busy - m0.busy) / (m1.total - m0.total),
        mbps: (n * fileMb) / seconds,
        peakMb,
        cpu: cpuSeconds(pid) - cpu0,
        cpuPerGiB: (cpuSeconds(pid) - cpu0) / (n * fileGiB),
        enc: encResult,
      };
    };
    const show = (label: string, p: Phase & { enc?: LoadResult }) =>
      console.log(
        `  ${label}: ${fmt(p.seconds)} s, ${fmt(p.mbps, 0)} MB/s aggregate, server CPU ${fmt(p.cpu)} s (${fmt(p.cpuPerGiB)} s/GiB), machine ${fmt(100 * p.machine, 0)}% busy, peak RSS ${fmt(p.peakMb, 0)} MB` +
          (p.enc
            ? `; encrypt ${p.enc.tool} ${p.enc.requests} requests (${p.enc.errors} errors), p50 ${fmt(p.enc.p50Ms)} ms, p99 ${fmt(p.enc.p99Ms)} ms`
            : ''),
      );

    // Warm-up: JIT, key loading, the encrypt path, and (when used) the conversion threads.
    await Promise.all(
      Array.from({ length: CLIENTS }, () =>
        convertOverHttp(keyward.url, admin, join(work, 'warm.der')),
      ),
    );
    // One answer read and checked whole; the others only have to match its length.
    const first = await convertOverHttp(keyward.url, admin, file);
    if (
      first.status !== 200 ||
      !/------service-[0-9a-f-]{36}--\r\n$/.test(first.tail.toString('latin1'))
    )
      throw new Error(
        `first conversion: HTTP ${first.status} ${first.head.toString().slice(0, 300)}`,
      );
    wholeBytes = first.bytesOut;
    const idle = await encrypt(2);
    console.log(
      `  encrypt alone (4 connections, ${idle.tool}): ${Math.round(idle.requestsPerSecond)} req/s, p50 ${fmt(idle.p50Ms)} ms, p99 ${fmt(idle.p99Ms)} ms`,
    );

    const alone1 = await phase(1, false);
    show('one alone (A1)', alone1);
    const four1 = await phase(CLIENTS, true);
    show(`${CLIENTS} at once (B1)`, four1);
    const alone2 = await phase(1, false);
    show('one alone (A2)', alone2);
    const four2 = await phase(CLIENTS, true);
    show(`${CLIENTS} at once (B2)`, four2);
    // The four again without the fifth client, for the CPU figure (B's includes the encrypt loop).
    const quiet1 = await phase(CLIENTS, false);
    show(`${CLIENTS} at once, no fifth client (C1)`, quiet1);
    const alone3 = await phase(1, false);
    show('one alone (A3)', alone3);
    const quiet2 = await phase(CLIENTS, false);
    show(`${CLIENTS} at once, no fifth client (C2)`, quiet2);

    const r1 = four1.mbps / alone1.mbps;
    const r2 = four2.mbps / alone2.mbps;
    const p50 = Math.max(four1.enc!.p50Ms, four2.enc!.p50Ms);
    const p99 = Math.max(four1.enc!.p99Ms, four2.enc!.p99Ms);
    const cpuAlone = (alone2.cpuPerGiB + alone3.cpuPerGiB) / 2;
    const cpuFour = (quiet1.cpuPerGiB + quiet2.cpuPerGiB) / 2;
    const peak = Math.max(
      ...[alone1, four1, alone2, four2, quiet1, alone3, quiet2].map((p) => p.peakMb),
    );
    console.log(
      `pkcs7-concurrent: four/one ${fmt(r1, 3)} (A1 B1), ${fmt(r2, 3)} (A2 B2) (target >= 1.0, ${r1 >= 1 && r2 >= 1 ? 'met' : 'NOT met'}); fifth client's encrypt during the four p50 ${fmt(four1.enc!.p50Ms)}/${fmt(four2.enc!.p50Ms)} ms, p99 ${fmt(four1.enc!.p99Ms)}/${fmt(four2.enc!.p99Ms)} ms (target p99 < 50, ${p99 < 50 ? 'met' : 'NOT met'}); server CPU ${fmt(cpuAlone)} s/GiB one alone, ${fmt(cpuFour)} s/GiB four at once; server peak RSS ${fmt(peak, 0)} MB; load average ${load()}`,
    );
    printResult({
      name: 'pkcs7-concurrent',
      metric: `${CLIENTS} concurrent ${fmt(SIZE / MiB, 0)} MiB EnvelopedData conversions, one API process, aggregate MB/s`,
      value: Number(fmt(Math.min(four1.mbps, four2.mbps), 1)),
      baseline: 'one conversion alone, same file, same run (ABAB)',
      baselineValue: Number(fmt(Math.max(alone1.mbps, alone2.mbps), 1)),
      ratio: Number(fmt(Math.min(r1, r2), 3)),
      unit: 'MB/s',
      target: { op: '>=', value: 1, of: 'ratio', issue: 29 },
      notes: `pairs ${fmt(r1, 3)} and ${fmt(r2, 3)}; server peak RSS ${fmt(peak, 0)} MB (Postgres)`,
    });
    printResult({
      name: 'pkcs7-concurrent-encrypt-p99',
      metric: `a fifth client's POST /api/v3/crypto/encrypt 1 KiB p99 during the ${CLIENTS} conversions`,
      value: Number(fmt(p99)),
      baseline: 'the same loop on the idle server',
      baselineValue: Number(fmt(idle.p99Ms)),
      ratio: Number(fmt(p99 / idle.p99Ms)),
      unit: 'ms',
      target: { op: '<', value: 50, of: 'value', issue: 29 },
      notes: `p50 ${fmt(p50)} ms; ${four1.enc!.tool}, 4 connections, worst of both B phases`,
    });
    printResult({
      name: 'pkcs7-concurrent-cpu',
      metric: `server CPU seconds per GiB of input, ${CLIENTS} concurrent ${fmt(SIZE / MiB, 0)} MiB EnvelopedData conversions`,
      value: Number(fmt(cpuFour, 3)),
      baseline: 'one conversion alone, same run (phases A2 A3, alternated with C1 C2)',
      baselineValue: Number(fmt(cpuAlone, 3)),
      ratio: Number(fmt(cpuFour / cpuAlone, 3)),
      unit: 's/GiB',
      notes: `no target: what a larger machine's scaling is read from; phases A2/A3 ${fmt(alone2.cpuPerGiB)}/${fmt(alone3.cpuPerGiB)} s/GiB alone, C1/C2 ${fmt(quiet1.cpuPerGiB)}/${fmt(quiet2.cpuPerGiB)} s/GiB four (no fifth client; with it, B1/B2 ${fmt(four1.cpuPerGiB)}/${fmt(four2.cpuPerGiB)}); four/one without the fifth client ${fmt(quiet1.mbps / alone2.mbps, 3)} (A2 C1), ${fmt(quiet2.mbps / alone3.mbps, 3)} (A3 C2); load average ${load()}`,
    });
  } finally {
    await keyward.stop();
    await pgAdmin(PG, `DROP DATABASE IF EXISTS ${dbName}`).catch((err) =>
      console.error(`could not drop ${dbName}: ${(err as Error).message}`),
    );
  }
} finally {
  if (existsSync(work)) rmSync(work, { recursive: true, force: true });
}
