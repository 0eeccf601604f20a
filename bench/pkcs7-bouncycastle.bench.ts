/**
 * 1 GiB PKCS#7/CMS conversions over HTTP against BouncyCastle's streaming parsers and against the
 * physical floor of a SignedData conversion, alternated in one run.
 *
 * Inputs, in a temporary directory under /tmp: 1 GiB of random bytes made into an EnvelopedData
 * (`openssl cms -encrypt -binary -aes256 -stream`, RSA recipient) and an attached SignedData
 * (`openssl cms -sign -binary -nodetach -stream -md sha256`, RSA, signed attributes).
 * Ours: a real API process on `npm start`'s defaults (access log at info, the embedded database),
 * the certificate and key imported through import-keystore; each file streamed from disk by curl
 * as the file part of convert-pkcs7-to-jose, the answer written to /dev/null (bench/lib/cms.ts
 * convertDiscarding, the cheapest client on 2 cores). The answers of the warm-up inputs are read
 * whole and checked (the JWE's closing delimiter, the JWS verified over the content); every 1 GiB
 * answer must be HTTP 200, whole (curl fails on a cut chunked body) and as long as its other round.
 * Baselines, same files, same run:
 * - BouncyCastle 1.72 (Debian's jars) reading into a counting sink, writing nothing:
 *   CMSEnvelopedDataParser with JceKeyTransEnvelopedRecipient, the content stream read to its end;
 *   CMSSignedDataParser with a SHA-256 digest calculator provider, the signed content drained,
 *   then SignerInformation.verify (JcaSimpleSignerInfoVerifierBuilder, the carried certificate).
 *   One warm JVM, timed inside it (bench/lib/bouncycastle.ts, bench/lib/java/BcStream.java).
 * - The physical floor of SignedData: the two SHA-256 passes a conversion must make (the CMS
 *   content digest and the JWS signing input), as two `openssl dgst -sha256` of the SignedData
 *   file started at once, wall time until both have ended.
 * Order: EnvelopedData ours, BC, BC, ours (ABBA); SignedData ours, BC, floor, floor, BC, ours.
 * Each ratio is over the sums of both rounds; every round is printed.
 * Targets: EnvelopedData ours / BC decrypt <= 0.5; SignedData ours / BC verify <= 1.0;
 * SignedData ours / the two-SHA floor <= 1.25; the API's peak RSS < 200 MB (sampled every 20 ms
 * through the 1 GiB rounds; the embedded database runs in a process of its own, not counted).
 *
 * The embedded default, then the same rounds on a second API over a fresh database on Postgres
 * (both are measured): BENCH_DATABASE_URL names the server (default
 * postgres://postgres@127.0.0.1:5432/test), BENCH_DATABASE_URL=none runs the embedded one only. BENCH_PKCS7_MIB overrides 1 GiB (smoke runs). The
 * load average is printed at the start and the end and is in every row's notes: the machine's
 * 2 cores are often shared, so read the ratios with it.
 */
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startBcStream, type BcStream } from './lib/bouncycastle.ts';
import { pgAdmin } from './lib/jobs.ts';
import { platformAdmin, startKeyward } from './lib/keyward.ts';
import { printResult } from './lib/result.ts';
import {
  OPENSSL,
  convertDiscarding,
  convertOverHttp,
  cpuSeconds,
  envelop,
  freeBytes,
  importKey,
  makeRsaCert,
  procMb,
  randomFile,
  rssNow,
  rssSampler,
  signAttached,
  verifyJws,
} from './lib/cms.ts';

const MiB = 1024 * 1024;
const SIZE = Number(process.env.BENCH_PKCS7_MIB ?? 1024) * MiB;
const WARM = Math.min(SIZE, 32 * MiB);
const PG_SETTING = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const PG = PG_SETTING === 'none' ? undefined : PG_SETTING;
const work = mkdtempSync('/tmp/keyward-pkcs7-bc-bench-');
const at = (name: string) => join(work, name);
const fmt = (n: number, d = 2) => n.toFixed(d);
const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
const mean = (xs: number[]) => sum(xs) / xs.length;
const rounds = (xs: number[]) => xs.map((x) => `${fmt(x)} s`).join(', ');
const met = (ok: boolean) => (ok ? 'met' : 'NOT met');
const load = () =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');
const execFileAsync = promisify(execFile);
/** The last bytes of a whole JWE answer: the multipart's closing delimiter. */
const CLOSED = /------service-[0-9a-f-]{36}--\r\n$/;

interface Inputs {
  plain: string;
  env: string;
  signed: string;
}

/** What one API process measured. */
interface Figures {
  database: string;
  env: { ours: number[]; bc: number[] };
  sig: { ours: number[]; bc: number[]; floor: number[] };
  idleMb: number;
  peakMb: number;
  /** Server CPU seconds of each conversion, by kind. */
  cpu: { env: number[]; sig: number[] };
}

/** Random content of `bytes` made into both inputs. */
function makeInputs(bytes: number, tag: string): Inputs {
  const files = {
    plain: at(`plain-${tag}.bin`),
    env: at(`env-${tag}.der`),
    signed: at(`signed-${tag}.der`),
  };
  randomFile(files.plain, bytes);
  envelop(work, files.plain, files.env);
  signAttached(work, files.plain, files.signed);
  return files;
}

/** The physical floor of a SignedData conversion: two SHA-256 passes of `file`, side by side. */
async function twoSha256(file: string): Promise<number> {
  const t0 = performance.now();
  await Promise.all([1, 2].map(() => execFileAsync(OPENSSL, ['dgst', '-sha256', file])));
  return (performance.now() - t0) / 1000;
}

/** Starts the API on `env`, checks the warm-up answers whole, then runs the alternated rounds. */
async function measure(
  database: string,
  env: Record<string, string>,
  pem: Buffer,
  warm: Inputs,
  big: Inputs,
  bc: BcStream,
): Promise<Figures> {
  const keyward = await startKeyward(env);
  try {
    const pid = keyward.child.process.pid!;
    const { tenantId, token: admin } = await platformAdmin(keyward);
    // One certificate, imported once per usage: the CMS recipient decrypts, the signer signs.
    await importKey(keyward.url, admin, tenantId, pem, 'bench-rsa', 'encrypt');
    await importKey(keyward.url, admin, tenantId, pem, 'bench-rsa-signer', 'sign');

    // Warm-up (JIT, key loading) on the small inputs, whose answers are read whole and checked.
    const jwe = await convertOverHttp(keyward.url, admin, warm.env);
    const jws = await convertOverHttp(keyward.url, admin, warm.signed);
    if (jwe.status !== 200 || !CLOSED.test(jwe.tail.toString('latin1')))
      throw new Error(`${database} warm-up JWE: HTTP ${jwe.status} or cut`);
    const cert = readFileSync(at('cert.pem'));
    if (jws.status !== 200 || !(await verifyJws(jws.head.toString(), warm.plain, cert)))
      throw new Error(`${database} warm-up JWS: HTTP ${jws.status} or does not verify`);

    // Two more warm-up rounds each, as a client of the timed rounds.
    for (const file of [warm.env, warm.signed, warm.env, warm.signed])
      await convertDiscarding(keyward.url, admin, file);

    const f: Figures = {
      database,
      env: { ours: [], bc: [] },
      sig: { ours: [], bc: [], floor: [] },
      idleMb: rssNow(pid),
      peakMb: 0,
      cpu: { env: [], sig: [] },
    };
    const lengths = new Map<string, number>();
    const ours = async (kind: 'env' | 'sig', file: string) => {
      const cpu0 = cpuSeconds(pid);
      const r = await convertDiscarding(keyward.url, admin, file);
      f.cpu[kind].push(cpuSeconds(pid) - cpu0);
      if (r.status !== 200 || (lengths.get(file) ?? r.bytesOut) !== r.bytesOut)
        throw new Error(`${database} ${kind}: HTTP ${r.status}, ${r.bytesOut} bytes`);
      lengths.set(file, r.bytesOut);
      console.log(`  ${database} ${kind} ours ${fmt(r.seconds)} s`);
      f[kind].ours.push(r.seconds);
    };
    const theirs = async (kind: 'env' | 'sig', file: string) => {
      const r = await bc.run(kind === 'env' ? 'envelope' : 'signed', file);
      if (r.bytes !== SIZE || (kind === 'sig' && r.verified !== true))
        throw new Error(`BouncyCastle ${kind}: ${r.bytes} bytes, verified ${r.verified}`);
      console.log(`  ${database} ${kind} BouncyCastle ${fmt(r.seconds)} s`);
      f[kind].bc.push(r.seconds);
    };
    const floor = async () => {
      const seconds = await twoSha256(big.signed);
      console.log(`  ${database} sig two openssl dgst -sha256 ${fmt(seconds)} s`);
      f.sig.floor.push(seconds);
    };

    const sampler = rssSampler(pid);
    await ours('env', big.env);
    await theirs('env', big.env);
    await theirs('env', big.env);
    await ours('env', big.env);
    await ours('sig', big.signed);
    await theirs('sig', big.signed);
    await floor();
    await floor();
    await theirs('sig', big.signed);
    await ours('sig', big.signed);
    f.peakMb = sampler.stop();
    return f;
  } finally {
    await keyward.stop();
  }
}

/** Prints one database's figures and its four RESULT rows. */
function report(f: Figures, bcPeakMb: number, loadAtStart: string): void {
  const envRatio = sum(f.env.ours) / sum(f.env.bc);
  const sigRatio = sum(f.sig.ours) / sum(f.sig.bc);
  const floorRatio = sum(f.sig.ours) / sum(f.sig.floor);
  const size = `${fmt(SIZE / MiB, 0)} MiB`;
  const loadNote = `load average ${loadAtStart} at the start, ${load()} at the end`;
  console.log(
    `pkcs7-bouncycastle (${f.database}): EnvelopedData ours ${rounds(f.env.ours)} / BouncyCastle ${rounds(f.env.bc)} = ${fmt(envRatio, 3)} (target <= 0.5, ${met(envRatio <= 0.5)}); ` +
      `SignedData ours ${rounds(f.sig.ours)} / BouncyCastle ${rounds(f.sig.bc)} = ${fmt(sigRatio, 3)} (target <= 1.0, ${met(sigRatio <= 1)}), ` +
      `/ two SHA-256 side by side ${rounds(f.sig.floor)} = ${fmt(floorRatio, 3)} (target <= 1.25, ${met(floorRatio <= 1.25)}); ` +
      `API RSS ${fmt(f.idleMb, 0)} MB idle, ${fmt(f.peakMb, 0)} MB peak (target < 200, ${met(f.peakMb < 200)}); ` +
      `server CPU a conversion ${fmt(mean(f.cpu.env))} s EnvelopedData, ${fmt(mean(f.cpu.sig))} s SignedData; ${loadNote}`,
  );
  const cpuNote = (cpu: number[]) => `server CPU ${fmt(mean(cpu))} s a conversion`;
  printResult({
    name: 'pkcs7-bc-enveloped',
    metric: `${size} EnvelopedData (AES-256-CBC, RSA) to A256GCM JWE over HTTP, ${f.database}, seconds`,
    value: Number(fmt(mean(f.env.ours), 3)),
    baseline:
      'BouncyCastle 1.72 CMSEnvelopedDataParser decrypt to a counting sink, same file (ABBA)',
    baselineValue: Number(fmt(mean(f.env.bc), 3)),
    ratio: Number(fmt(envRatio, 3)),
    unit: 's',
    target: { op: '<=', value: 0.5, of: 'ratio', issue: 29 },
    notes: `ours ${rounds(f.env.ours)}, BouncyCastle ${rounds(f.env.bc)}; ${cpuNote(f.cpu.env)}; ${loadNote}`,
  });
  printResult({
    name: 'pkcs7-bc-signed',
    metric: `${size} SignedData (RSA, SHA-256, signed attributes) to JWS over HTTP, ${f.database}, seconds`,
    value: Number(fmt(mean(f.sig.ours), 3)),
    baseline:
      'BouncyCastle 1.72 CMSSignedDataParser drain and SignerInformation.verify, same file (ABBA)',
    baselineValue: Number(fmt(mean(f.sig.bc), 3)),
    ratio: Number(fmt(sigRatio, 3)),
    unit: 's',
    target: { op: '<=', value: 1, of: 'ratio', issue: 29 },
    notes: `ours ${rounds(f.sig.ours)}, BouncyCastle ${rounds(f.sig.bc)}; ${cpuNote(f.cpu.sig)}; ${loadNote}`,
  });
  printResult({
    name: 'pkcs7-sha-floor',
    metric: `${size} SignedData to JWS over HTTP, ${f.database}, seconds`,
    value: Number(fmt(mean(f.sig.ours), 3)),
    baseline: 'the physical floor: two openssl dgst -sha256 of the file side by side (same run)',
    baselineValue: Number(fmt(mean(f.sig.floor), 3)),
    ratio: Number(fmt(floorRatio, 3)),
    unit: 's',
    target: { op: '<=', value: 1.25, of: 'ratio', issue: 29 },
    notes: `ours ${rounds(f.sig.ours)}, floor ${rounds(f.sig.floor)}; ${loadNote}`,
  });
  printResult({
    name: 'pkcs7-bc-rss',
    metric: `API peak RSS through the ${size} conversions, ${f.database}, MB`,
    value: Number(fmt(f.peakMb, 0)),
    baseline: 'the BouncyCastle JVM peak RSS (VmHWM) over the same files',
    baselineValue: Number(fmt(bcPeakMb, 0)),
    ratio: Number(fmt(f.peakMb / bcPeakMb, 3)),
    unit: 'MB',
    target: { op: '<', value: 200, of: 'value', issue: 29 },
    notes: `idle ${fmt(f.idleMb, 0)} MB before the rounds${f.database === 'embedded' ? '; the embedded database process not counted' : ''}; ${loadNote}`,
  });
}

try {
  const loadAtStart = load();
  const need = 3 * SIZE + 3 * WARM + 256 * MiB;
  const free = freeBytes('/tmp');
  console.log(
    `pkcs7-bouncycastle: ${fmt(SIZE / MiB, 0)} MiB inputs, ${fmt(free / 2 ** 30, 1)} GiB free under /tmp, Node ${process.version}, ${execFileSync(OPENSSL, ['version']).toString().trim()}, ${spawnSync('/usr/bin/java', ['-version']).stderr.toString().split('\n')[0]}, BouncyCastle 1.72, databases embedded${PG ? ' and Postgres' : ''}, load average ${loadAtStart}`,
  );
  if (free < need)
    throw new Error(
      `needs ${fmt(need / 2 ** 30, 1)} GiB free under /tmp; ${fmt(free / 2 ** 30, 1)} GiB available`,
    );
  const pem = makeRsaCert(work);
  const warm = makeInputs(WARM, 'warm');
  const big = makeInputs(SIZE, 'big');
  rmSync(big.plain);

  mkdirSync(at('java'));
  const bc = startBcStream(at('java'), at('key.pem'));
  try {
    // The JVM's JIT warm-up, out of the figures as ours is.
    for (let i = 0; i < 3; i += 1) {
      await bc.run('envelope', warm.env);
      await bc.run('signed', warm.signed);
    }
    const figures = [await measure('embedded', {}, pem, warm, big, bc)];
    if (PG) {
      const dbName = `kw_bench_bc_${randomBytes(4).toString('hex')}`;
      await pgAdmin(PG, `CREATE DATABASE ${dbName}`);
      try {
        const url = Object.assign(new URL(PG), { pathname: `/${dbName}` }).href;
        figures.push(await measure('Postgres', { DATABASE_URL: url }, pem, warm, big, bc));
      } finally {
        await pgAdmin(PG, `DROP DATABASE IF EXISTS ${dbName}`).catch((err: Error) =>
          console.error(`could not drop ${dbName}: ${err.message}`),
        );
      }
    }
    const bcPeakMb = procMb(bc.pid, 'VmHWM');
    for (const f of figures) report(f, bcPeakMb, loadAtStart);
  } finally {
    await bc.stop();
  }
} finally {
  if (existsSync(work)) rmSync(work, { recursive: true, force: true });
}
