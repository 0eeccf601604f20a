/**
 * Streaming PKCS#7/CMS conversion over HTTP against OpenSSL on the same files, same run.
 *
 * A 1 GiB file of random bytes is made into an EnvelopedData (`openssl cms -encrypt -binary
 * -aes256 -stream -outform DER`, RSA recipient) and a SignedData (`openssl cms -sign -binary
 * -nodetach -stream -md sha256`, RSA, signed attributes) in a temporary directory under /tmp.
 * Baselines: `openssl cms -decrypt` and `openssl cms -verify -binary -noverify` (signature only,
 * as we check it) to /dev/null, wall time and peak RSS (/usr/bin/time). Ours: a real API process
 * (`node api/server.ts`, temp DATA_DIR) with the key imported through import-keystore; each file
 * is streamed from disk with node:http as the file part of convert-pkcs7-to-jose (metadata `{}`),
 * the answer read and discarded; the server's RSS is sampled from /proc every 20 ms.
 * Targets: decrypt ratio <= 0.35, verify ratio <= 0.6, server peak RSS < 200 MB.
 *
 * BENCH_PKCS7_4G=1 adds a 4 GiB run of ours only (OpenSSL needs about 2.7x the input in RAM)
 * and needs about 12 GiB free under /tmp. BENCH_PKCS7_MIB overrides the 1 GiB size (smoke runs).
 * The server runs on its embedded defaults (PGlite, whose WASM heap alone is about 450 MB of
 * RSS); BENCH_DATABASE_URL (a Postgres server URL) runs it on a fresh database there instead.
 * RSS is reported idle (before the request), at its peak, and as the growth between the two.
 * BENCH_POOL_THREADS sets the server's POOL_THREADS (default: one per core; each piscina worker
 * thread is an isolate with its own module graph, so it shows in the idle RSS); BENCH_CONVERT_THREADS
 * sets CONVERT_THREADS (default one per core; 0 converts on the event loop), and
 * BENCH_CONVERT_THREAD_FROM CONVERT_THREAD_FROM (1: even a conversion alone takes a thread).
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import knexFactory from 'knex';
import { platformAdmin, startKeyward } from './lib/keyward.ts';
import { printResult } from './lib/result.ts';
import {
  OPENSSL,
  convertOverHttp,
  cpuSeconds,
  decryptArgs,
  envelop,
  freeBytes,
  importKey,
  makeRsaCert,
  randomFile,
  rssNow,
  rssSampler,
  signAttached,
  timedOpenssl as timedIn,
  verifyJws,
  type Converted,
} from './lib/cms.ts';

const MiB = 1024 * 1024;
const SIZE = Number(process.env.BENCH_PKCS7_MIB ?? 1024) * MiB;
const WITH_4G = process.env.BENCH_PKCS7_4G === '1';
const PG = process.env.BENCH_DATABASE_URL;
const POOL_THREADS = process.env.BENCH_POOL_THREADS;
const CONVERT_THREADS = process.env.BENCH_CONVERT_THREADS;
const CONVERT_THREAD_FROM = process.env.BENCH_CONVERT_THREAD_FROM;
const work = mkdtempSync('/tmp/keyward-pkcs7-bench-');
const dbName = `kw_bench_pkcs7_${randomBytes(4).toString('hex')}`;
const load = () =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');
const at = (name: string) => join(work, name);
const mb = (bytes: number) => bytes / 1e6;
const fmt = (n: number, d = 2) => n.toFixed(d);

const timedOpenssl = (args: string[]) => timedIn(work, args);

/** Creates or drops the bench database on the BENCH_DATABASE_URL server. */
async function pgAdmin(sql: string): Promise<void> {
  const k = knexFactory({ client: 'pg', connection: PG, pool: { min: 0, max: 1 } });
  try {
    await k.raw(sql);
  } finally {
    await k.destroy();
  }
}

interface Round {
  label: string;
  bytes: number;
  ours: Converted;
  peakMb: number;
  idleMb: number;
  cpu: number;
}

function describe(r: Round, baseline?: { seconds: number; peakMb: number }): string {
  const ours = `${r.label}: ${fmt(r.ours.seconds)} s, ${fmt(mb(r.bytes) / r.ours.seconds, 0)} MB/s in, server RSS ${fmt(r.idleMb, 0)} MB idle, ${fmt(r.peakMb, 0)} MB peak (+${fmt(r.peakMb - r.idleMb, 0)} MB), server CPU ${fmt(r.cpu)} s`;
  if (!baseline) return ours;
  return `${ours} | openssl ${fmt(baseline.seconds)} s, ${fmt(mb(r.bytes) / baseline.seconds, 0)} MB/s, ${fmt(baseline.peakMb, 0)} MB peak | ratio ${fmt(r.ours.seconds / baseline.seconds, 3)}`;
}

try {
  const need = (WITH_4G ? 4 * 3 * 1024 * MiB : 0) + 3 * SIZE + 512 * MiB;
  const free = freeBytes('/tmp');
  console.log(
    `pkcs7: ${fmt(SIZE / MiB, 0)} MiB inputs${WITH_4G ? ' and 4 GiB' : ''}, ${fmt(free / 2 ** 30, 1)} GiB free under /tmp, Node ${process.version}, ${execFileSync(OPENSSL, ['version']).toString().trim()}, database ${PG ? 'Postgres' : 'PGlite (embedded default)'}, pool threads ${POOL_THREADS ?? 'default'}, conversion threads ${CONVERT_THREADS ?? 'default'} from ${CONVERT_THREAD_FROM ?? 'default'}, load average ${load()}`,
  );
  if (free < need)
    throw new Error(
      `needs ${fmt(need / 2 ** 30, 1)} GiB free under /tmp; ${fmt(free / 2 ** 30, 1)} GiB available`,
    );
  const pem = makeRsaCert(work);

  if (PG) await pgAdmin(`CREATE DATABASE ${dbName}`);
  const pgUrl = PG ? Object.assign(new URL(PG), { pathname: `/${dbName}` }).href : undefined;
  const keyward = await startKeyward({
    ...(pgUrl ? { DATABASE_URL: pgUrl } : {}),
    ...(POOL_THREADS ? { POOL_THREADS } : {}),
    ...(CONVERT_THREADS ? { CONVERT_THREADS } : {}),
    ...(CONVERT_THREAD_FROM ? { CONVERT_THREAD_FROM } : {}),
  });
  try {
    const pid = keyward.child.process.pid!;
    const { tenantId, token: admin } = await platformAdmin(keyward);
    // One certificate, imported once per usage: the CMS recipient decrypts, the signer signs.
    await importKey(keyward.url, admin, tenantId, pem, 'bench-rsa', 'encrypt');
    await importKey(keyward.url, admin, tenantId, pem, 'bench-rsa-signer', 'sign');

    /** Makes the inputs of one size; returns the file names. */
    const make = (bytes: number, tag: string) => {
      const t0 = performance.now();
      randomFile(at(`plain-${tag}.bin`), bytes);
      envelop(work, `plain-${tag}.bin`, `env-${tag}.der`);
      signAttached(work, `plain-${tag}.bin`, `signed-${tag}.der`);
      console.log(
        `  made ${tag} inputs in ${fmt((performance.now() - t0) / 1000, 1)} s: EnvelopedData ${fmt(statSync(at(`env-${tag}.der`)).size / MiB, 1)} MiB, SignedData ${fmt(statSync(at(`signed-${tag}.der`)).size / MiB, 1)} MiB`,
      );
      return {
        plain: at(`plain-${tag}.bin`),
        env: at(`env-${tag}.der`),
        signed: at(`signed-${tag}.der`),
      };
    };

    const ours = async (
      label: string,
      file: string,
      bytes: number,
      metadata?: string,
    ): Promise<Round> => {
      const idleMb = rssNow(pid);
      const cpu0 = cpuSeconds(pid);
      const sampler = rssSampler(pid);
      const r = await convertOverHttp(keyward.url, admin, file, metadata);
      const peakMb = sampler.stop();
      const cpu = cpuSeconds(pid) - cpu0;
      if (r.status !== 200)
        throw new Error(`${label}: HTTP ${r.status} ${r.head.toString().slice(0, 300)}`);
      return { label, bytes, ours: r, peakMb, idleMb, cpu };
    };

    // Warm-up on a small pair so JIT and key loading are not in the first figure.
    const warm = make(4 * MiB, 'warm');
    await ours('warm-up', warm.env, 4 * MiB);
    await ours('warm-up', warm.signed, 4 * MiB);

    const files = make(SIZE, '1g');
    const sslDecrypt = await timedOpenssl(decryptArgs(files.env));
    const env = await ours('EnvelopedData AES-256-CBC -> A256GCM', files.env, SIZE);
    const sslVerify = await timedOpenssl([
      'cms',
      '-verify',
      '-binary',
      '-noverify',
      '-inform',
      'DER',
      '-in',
      files.signed,
      '-out',
      '/dev/null',
    ]);
    const sig = await ours('SignedData RSA SHA-256 -> JWS', files.signed, SIZE);
    // With the signer named, the JWS hashes for its key's algs only (RS256 and PS256, not ES256 too).
    const sigKid = await ours(
      'SignedData, metadata {"signerKid"}',
      files.signed,
      SIZE,
      '{"signerKid":"bench-rsa-signer"}',
    );

    const closed = /------service-[0-9a-f-]{36}--\r\n$/.test(env.ours.tail.toString('latin1'));
    const jwsOk = await verifyJws(
      sig.ours.head.toString(),
      files.plain,
      readFileSync(at('cert.pem')),
    );
    const decryptRatio = env.ours.seconds / sslDecrypt.seconds;
    const verifyRatio = sig.ours.seconds / sslVerify.seconds;
    console.log(`  ${describe(env, sslDecrypt)} (target <= 0.35)`);
    console.log(`  ${describe(sig, sslVerify)} (target <= 0.6)`);
    console.log(`  ${describe(sigKid, sslVerify)}`);
    console.log(
      `  checks: JWE answer ${fmt(env.ours.bytesOut / MiB, 1)} MiB with its closing delimiter: ${closed}; JWS verifies over the 1 GiB content: ${jwsOk}`,
    );
    const line = keyward.child
      .output()
      .split('\n')
      .filter((l) => l.includes('"op":"migration.convert"'))
      .slice(-1)[0];
    if (line) console.log(`  server log: ${line.slice(0, 400)}`);
    for (const f of Object.values(files)) rmSync(f, { force: true });
    if (!closed || !jwsOk) throw new Error('a conversion output failed its check');

    let peak4g = Number.NaN;
    if (WITH_4G) {
      const big = make(4 * 1024 * MiB, '4g');
      rmSync(big.plain, { force: true });
      const e4 = await ours('4 GiB EnvelopedData -> A256GCM', big.env, 4 * 1024 * MiB);
      const s4 = await ours('4 GiB SignedData -> JWS', big.signed, 4 * 1024 * MiB);
      console.log(`  ${describe(e4)}`);
      console.log(`  ${describe(s4)}`);
      console.log('  (no OpenSSL baseline at 4 GiB: it holds about 2.7x the input in memory)');
      peak4g = Math.max(e4.peakMb, s4.peakMb);
      for (const f of Object.values(big)) rmSync(f, { force: true });
    }
    const peak = Math.max(env.peakMb, sig.peakMb, sigKid.peakMb);
    const growth = Math.max(
      env.peakMb - env.idleMb,
      sig.peakMb - sig.idleMb,
      sigKid.peakMb - sigKid.idleMb,
    );
    console.log(
      `pkcs7: decrypt ratio ${fmt(decryptRatio, 3)} (target <= 0.35), verify ratio ${fmt(verifyRatio, 3)} (target <= 0.6), server peak RSS ${fmt(peak, 0)} MB at 1 GiB (+${fmt(growth, 0)} MB over idle)${WITH_4G ? `, ${fmt(peak4g, 0)} MB at 4 GiB` : ''} (target < 200 MB); load average ${load()}`,
    );
    const db = PG ? 'Postgres' : 'PGlite';
    printResult({
      name: 'pkcs7',
      metric: `${fmt(SIZE / MiB, 0)} MiB EnvelopedData (AES-256-CBC, RSA) to A256GCM JWE over HTTP, seconds`,
      value: Number(fmt(env.ours.seconds, 3)),
      baseline: 'openssl cms -decrypt, same file',
      baselineValue: Number(fmt(sslDecrypt.seconds, 3)),
      ratio: Number(fmt(decryptRatio, 3)),
      unit: 's',
      target: { op: '<=', value: 0.35, of: 'ratio', issue: 6 },
      notes: `ours ${fmt(mb(SIZE) / env.ours.seconds, 0)} MB/s; ${db}`,
    });
    printResult({
      name: 'pkcs7-verify',
      metric: `${fmt(SIZE / MiB, 0)} MiB SignedData (RSA, SHA-256, signed attributes) to JWS over HTTP, seconds`,
      value: Number(fmt(sig.ours.seconds, 3)),
      baseline: 'openssl cms -verify, same file',
      baselineValue: Number(fmt(sslVerify.seconds, 3)),
      ratio: Number(fmt(verifyRatio, 3)),
      unit: 's',
      target: { op: '<=', value: 0.6, of: 'ratio', issue: 6 },
      notes: `ours ${fmt(mb(SIZE) / sig.ours.seconds, 0)} MB/s; with the signer named (signerKid) ${fmt(sigKid.ours.seconds)} s; ${db}`,
    });
    const peakAll = WITH_4G ? Math.max(peak, peak4g) : peak;
    printResult({
      name: 'pkcs7-rss',
      metric: `server peak RSS through the ${fmt(SIZE / MiB, 0)} MiB conversions${WITH_4G ? ' and the 4 GiB ones' : ''}, MB`,
      value: Number(fmt(peakAll, 0)),
      baseline: 'openssl cms -decrypt peak RSS, same file',
      baselineValue: Number(fmt(sslDecrypt.peakMb, 0)),
      ratio: Number(fmt(peakAll / sslDecrypt.peakMb, 3)),
      unit: 'MB',
      target: { op: '<', value: 200, of: 'value', issue: 6 },
      notes: `+${fmt(growth, 0)} MB over idle at ${fmt(SIZE / MiB, 0)} MiB${WITH_4G ? `, ${fmt(peak4g, 0)} MB at 4 GiB` : ''}, ${db}; openssl cms -verify peak ${fmt(sslVerify.peakMb, 0)} MB`,
    });
  } finally {
    await keyward.stop();
    if (PG)
      await pgAdmin(`DROP DATABASE IF EXISTS ${dbName}`).catch((err) =>
        console.error(`could not drop ${dbName}: ${(err as Error).message}`),
      );
  }
} finally {
  if (existsSync(work)) rmSync(work, { recursive: true, force: true });
}
