/**
 * A batch migration of a folder mixing every archive form through the CLI: at least
 * 200 files made by `openssl cms` (DER, BER, PEM, bare base64, S/MIME .p7m, a whole .eml
 * message, clear-signed multipart/signed, signed-then-encrypted mail, SignedData -nodetach),
 * 4 KiB to 4 MiB of content (log-uniform), migrated by `keyward migrate <folder> --out <dir>
 * --cleanup` (a child process, as a user runs it) against a real API process and TWO worker
 * processes (`node workers/worker.ts`, concurrency 1 each) on a Postgres database made for the run
 * (dropped after), real Redis, and the objects under DATA_DIR (shared by the API and the workers,
 * as in the jobs bench; s3rver's filesystem store, the jobs tests' S3, loses a put when a delete
 * in the same "folder" prunes its directory meanwhile, which --cleanup does all the time). Every output is then checked with jose: a JWE opens to
 * the exact plaintext (the decrypted clear-signed message for signed-then-encrypted mail, whose
 * third part, the JWS, verifies over the signed text), a JWS verifies over the exact signed
 * bytes, and each SignedData's `.content` is on disk and equal to them; the object store must
 * hold no object afterwards (uploads and results). The figure is files/s and bytes/s of the CLI
 * run (wall clock of the process); the baseline, as in the jobs bench, is the streaming HTTP
 * convert of the same files, 2 requests in flight (curl, bench/lib/cms.ts), same run.
 *
 * BENCH_FILES (default 225; the issue's figure needs at least 200) sets the count; BENCH_TIMEOUT_S (default 900) bounds
 * the CLI run. Needs Postgres (BENCH_DATABASE_URL, TEST_DATABASE_URL or 127.0.0.1:5432) and
 * Redis (REDIS_URL or 127.0.0.1:6379).
 */
import { spawn } from 'node:child_process';
import { createPublicKey, randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { createObjectStore } from '../shared/storage/index.ts';
import {
  OpenSslDir,
  decryptJweParts,
  makeKey,
  parseMultipart,
  verifyDetached,
  type TestKey,
} from '../support/fixtures/pkcs7.ts';
import { prng } from '../support/prng.ts';
import { JOB_PERMISSIONS } from '../support/job-permissions.ts';
import { convertOverHttp, importKey } from './lib/cms.ts';
import { dropQueueKeys, pgAdmin, pool, startWorker } from './lib/jobs.ts';
import { adminToken, provision, startKeyward } from './lib/keyward.ts';
import { cleanEnv } from './lib/process.ts';
import { printResult } from './lib/result.ts';
import { cms } from '../support/fixtures/cms.ts';

const FILES = Number(process.env.BENCH_FILES ?? 225);
const CLI_TIMEOUT_MS = Number(process.env.BENCH_TIMEOUT_S ?? 900) * 1000;
const KiB = 1024;
const root = new URL('..', import.meta.url).pathname;
const pgBase =
  process.env.BENCH_DATABASE_URL ??
  process.env.TEST_DATABASE_URL ??
  'postgres://postgres@127.0.0.1:5432/postgres';
const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const dbName = `kw_bench_arc_${randomBytes(5).toString('hex')}`;
const queuePrefix = `kwbench-arc-${randomBytes(3).toString('hex')}`;
const ssl = new OpenSslDir();
const src = join(ssl.dir, 'src');
const out = join(ssl.dir, 'out');
const stoppers: Array<() => Promise<unknown>> = [];
const load = () =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');
const crlf = (b: Buffer) => Buffer.from(b.toString('latin1').replace(/\r?\n/g, '\r\n'), 'latin1');

/** What a file's output must be: a JWE opening to `plaintext` (and a JWS over `innerSigned`), or a JWS over `content`. */
type Expect =
  { kind: 'jwe'; plaintext: Buffer; innerSigned?: Buffer } | { kind: 'jws'; content: Buffer };

interface Form {
  name: string;
  ext: string;
  /** Text content (clear-signed mail is text; the rest takes any bytes). */
  text: boolean;
  /** Writes `file` from plain.bin; answers what its output must be. */
  make(file: string, plain: Buffer): Expect;
}

let rsa: TestKey;
let signer: TestKey;
const encrypt = (extra: string[], file: string) =>
  cms.encrypt(ssl, 'plain.bin', {
    to: rsa,
    cipher: 'aes256',
    binary: true,
    out: file,
    extra: extra,
  });
const signNodetach = (extra: string[], file: string) =>
  cms.sign(ssl, 'plain.bin', {
    by: signer,
    detached: false,
    binary: true,
    out: file,
    extra: extra,
  });
const clearSign = (file: string) => cms.sign(ssl, 'plain.bin', { by: signer, out: file });

const FORMS: Form[] = [
  {
    name: 'DER EnvelopedData',
    ext: 'der.p7m',
    text: false,
    make: (f, plain) => (encrypt(['-outform', 'DER'], f), { kind: 'jwe', plaintext: plain }),
  },
  {
    name: 'BER EnvelopedData (-stream)',
    ext: 'ber.p7m',
    text: false,
    make: (f, plain) => (
      encrypt(['-stream', '-outform', 'DER'], f),
      { kind: 'jwe', plaintext: plain }
    ),
  },
  {
    name: 'PEM SignedData',
    ext: 'pem',
    text: false,
    make: (f, plain) => (signNodetach(['-outform', 'PEM'], f), { kind: 'jws', content: plain }),
  },
  {
    name: 'bare base64 EnvelopedData',
    ext: 'b64',
    text: false,
    make: (f, plain) => {
      encrypt(['-outform', 'DER'], `${f}.der`);
      const b64 = ssl.read(`${f}.der`).toString('base64');
      rmSync(ssl.path(`${f}.der`));
      ssl.write(f, Buffer.from(`${b64.replace(/.{1,64}/g, '$&\n')}`));
      return { kind: 'jwe', plaintext: plain };
    },
  },
  {
    name: 'S/MIME EnvelopedData (base64 .p7m)',
    ext: 'smime.p7m',
    text: false,
    make: (f, plain) => (encrypt([], f), { kind: 'jwe', plaintext: plain }),
  },
  {
    name: 'whole .eml message (S/MIME with mail headers)',
    ext: 'eml',
    text: false,
    make: (f, plain) => (
      encrypt(
        ['-from', 'archive@keyward.local', '-to', 'owner@keyward.local', '-subject', 'bench'],
        f,
      ),
      { kind: 'jwe', plaintext: plain }
    ),
  },
  {
    name: 'clear-signed multipart/signed',
    ext: 'signed.eml',
    text: true,
    make: (f, plain) => (clearSign(f), { kind: 'jws', content: crlf(plain) }),
  },
  {
    name: 'signed-then-encrypted mail',
    ext: 'sig-enc.eml',
    text: true,
    make: (f, plain) => {
      clearSign(`${f}.signed`);
      cms.encrypt(ssl, `${f}.signed`, { to: rsa, cipher: 'aes256', out: f });
      const signedMail = ssl.read(`${f}.signed`);
      rmSync(ssl.path(`${f}.signed`));
      return { kind: 'jwe', plaintext: crlf(signedMail), innerSigned: crlf(plain) };
    },
  },
  {
    name: 'SignedData -nodetach (DER)',
    ext: 'nodetach.p7m',
    text: false,
    make: (f, plain) => (signNodetach(['-outform', 'DER'], f), { kind: 'jws', content: plain }),
  },
];

interface BenchFile {
  rel: string;
  form: Form;
  size: number;
  expect: Expect;
}

/** The folder: FILES files, the forms in turn, content 4 KiB to 4 MiB (log-uniform). */
function makeFolder(): BenchFile[] {
  mkdirSync(join(src, 'mail'), { recursive: true });
  const rand = prng(13);
  const random = randomBytes(4 * 1024 * KiB);
  // Text: base64 lines (what mail bodies hold), LF line ends as a file on disk has them.
  const text = Buffer.from(random.toString('base64').replace(/.{1,76}/g, '$&\n'));
  const files: BenchFile[] = [];
  for (let i = 0; i < FILES; i++) {
    const form = FORMS[i % FORMS.length];
    const size = Math.round(4 * KiB * Math.exp(rand() * Math.log(1024)));
    let plain = (form.text ? text : random).subarray(0, size);
    if (form.text) plain = plain.subarray(0, plain.lastIndexOf(0x0a) + 1);
    ssl.write('plain.bin', plain);
    // Some files one folder down: the CLI keeps the tree.
    const rel = `${i % 4 === 0 ? 'mail/' : ''}f${String(i).padStart(3, '0')}.${form.ext}`;
    const expect = form.make(join('src', rel), plain);
    files.push({ rel, form, size: statSync(join(src, rel)).size, expect });
  }
  rmSync(ssl.path('plain.bin'));
  return files;
}

/** Checks one output with jose; answers a problem, or null. */
async function check(f: BenchFile): Promise<string | null> {
  const base = join(out, f.rel);
  try {
    if (f.expect.kind === 'jwe') {
      const body = readFileSync(`${base}.jwe`);
      const boundary = body.subarray(2, body.indexOf('\r\n')).toString();
      const { parts, closed } = parseMultipart(body, `multipart/mixed; boundary="${boundary}"`);
      if (!closed) return 'the JWE has no closing delimiter';
      const { plaintext } = await decryptJweParts(parts, rsa.privateKey);
      if (!plaintext.equals(f.expect.plaintext)) return 'the JWE does not open to the plaintext';
      if (f.expect.innerSigned) {
        if (parts.length !== 3) return `the JWE has ${parts.length} parts, not 3`;
        await verifyDetached(
          JSON.parse(parts[2].body.toString()),
          f.expect.innerSigned,
          createPublicKey(signer.privateKey),
        );
      } else if (parts.length !== 2) return `the JWE has ${parts.length} parts, not 2`;
    } else {
      const content = readFileSync(`${base}.content`);
      if (!content.equals(f.expect.content)) return 'the .content differs from the signed bytes';
      await verifyDetached(
        JSON.parse(readFileSync(`${base}.jws.json`, 'utf8')),
        f.expect.content,
        createPublicKey(signer.privateKey),
      );
    }
    return null;
  } catch (err) {
    return (err as Error).message;
  }
}

/** Runs `keyward migrate`, killed past CLI_TIMEOUT_MS. */
function runCli(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string; seconds: number }> {
  return new Promise((resolve) => {
    const t0 = performance.now();
    const child = spawn(process.execPath, [join(root, 'bin/keyward.js'), ...args], {
      env: cleanEnv(env),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => {
      stderr += `\n(bench: killed after ${CLI_TIMEOUT_MS / 1000} s)\n`;
      child.kill('SIGKILL');
    }, CLI_TIMEOUT_MS);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, seconds: (performance.now() - t0) / 1000 });
    });
  });
}

/** Every object the store under DATA_DIR holds (every tenant, uploads and results), as the product lists them. */
async function objectsLeft(dataDir: string): Promise<string[]> {
  const keys: string[] = [];
  for await (const o of (await createObjectStore({ dataDir })).list('')) keys.push(o.key);
  return keys;
}

/** Files of any kind under the store's directory (staged writes included), whatever the listing says. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => !e.isDirectory())
    .map((e) => join(e.parentPath, e.name));
}

try {
  const t0 = performance.now();
  rsa = makeKey(ssl, 'arc-rsa', 'rsa-2048');
  signer = makeKey(ssl, 'arc-signer', 'rsa-2048');
  const files = makeFolder();
  const totalBytes = files.reduce((a, f) => a + f.size, 0);
  console.log(
    `archive-batch: ${files.length} files, ${(totalBytes / 1e6).toFixed(1)} MB, ${FORMS.length} forms, sizes ${Math.min(...files.map((f) => f.size))} to ${Math.max(...files.map((f) => f.size))} bytes, made in ${((performance.now() - t0) / 1000).toFixed(1)} s, Node ${process.version}, load average ${load()}`,
  );
  for (const form of FORMS) {
    const of = files.filter((f) => f.form === form);
    console.log(
      `  ${form.name.padEnd(46)} ${String(of.length).padStart(3)} files, ${(of.reduce((a, f) => a + f.size, 0) / 1e6).toFixed(1)} MB`,
    );
  }

  await pgAdmin(pgBase, `create database ${dbName}`);
  stoppers.push(() => pgAdmin(pgBase, `drop database if exists ${dbName} with (force)`));
  stoppers.push(() => dropQueueKeys(redisUrl, queuePrefix));
  const shared = {
    DATA_DIR: ssl.path('data'),
    DATABASE_URL: Object.assign(new URL(pgBase), { pathname: `/${dbName}` }).href,
    REDIS_URL: redisUrl,
    KEYWARD_MASTER_KEY: randomBytes(32).toString('base64'),
    QUEUE_PREFIX: queuePrefix,
  };
  const keyward = await startKeyward(shared);
  stoppers.push(() => keyward.stop());
  for (let i = 0; i < 2; i++) {
    const w = await startWorker(
      cleanEnv({ ...shared, WORKER_CONCURRENCY: '1', WORKER_METRICS_PORT: '0' }),
    );
    stoppers.push(() => w.stop());
  }
  const tenant = await provision(keyward, JOB_PERMISSIONS, []);
  const admin = await adminToken(keyward);
  for (const [k, usage] of [
    [rsa, 'encrypt'],
    [signer, 'sign'],
  ] as const)
    await importKey(
      keyward.url,
      admin,
      tenant.tenantId,
      Buffer.concat([ssl.read(k.keyFile), ssl.read(k.certFile)]),
      k.kid,
      usage,
    );

  const viaHttp = async (list: BenchFile[]) => {
    const started = performance.now();
    await pool(list, 2, async (f) => {
      const r = await convertOverHttp(keyward.url, tenant.token, join(src, f.rel));
      if (r.status !== 200)
        throw new Error(`convert ${f.rel}: ${r.status} ${r.head.toString().slice(0, 300)}`);
    });
    return (performance.now() - started) / 1000;
  };
  // Warm-up (JIT, key caches, connections): one file of each form over HTTP.
  await viaHttp(files.slice(0, FORMS.length));

  const cli = await runCli(
    ['migrate', src, '--out', out, '--cleanup', '--remote-prefix', 'bench/', '--poll', '100'],
    {
      KEYWARD_URL: keyward.url,
      KEYWARD_CLIENT_ID: tenant.clientId,
      KEYWARD_CLIENT_SECRET: tenant.clientSecret,
    },
  );
  const summaryLine = /\d+ files: .*/.exec(cli.stdout)?.[0] ?? '(no summary line)';
  console.log(
    `  keyward migrate --cleanup: exit ${cli.code} in ${cli.seconds.toFixed(2)} s: ${summaryLine}`,
  );
  if (cli.code !== 0)
    throw new Error(`keyward migrate exited ${cli.code}:\n${cli.stderr.slice(-3000)}`);

  const problems: string[] = [];
  let verified = 0;
  for (const f of files) {
    const p = await check(f);
    if (p) problems.push(`${f.rel} (${f.form.name}): ${p}`);
    else verified += 1;
  }
  const contents = files.filter((f) => f.expect.kind === 'jws').length;
  const left = await objectsLeft(shared.DATA_DIR);
  const onDisk = filesUnder(join(shared.DATA_DIR, 'objects'));
  console.log(
    `  checks: ${verified}/${files.length} outputs verified with jose (${contents} SignedData with their .content equal to the signed bytes); objects left in storage: ${left.length} listed, ${onDisk.length} files under DATA_DIR/objects`,
  );
  if (problems.length > 0) throw new Error(`outputs that fail:\n${problems.join('\n')}`);
  if (left.length > 0 || onDisk.length > 0)
    throw new Error(
      `--cleanup left objects behind: ${[...left, ...onDisk].slice(0, 20).join(', ')}`,
    );

  const http = await viaHttp(files);
  const cliFiles = files.length / cli.seconds;
  const cliBytes = totalBytes / cli.seconds;
  const httpBytes = totalBytes / http;
  console.log(
    `CLI migrate --cleanup, 2 workers x 1:      ${cliFiles.toFixed(1)} files/s, ${(cliBytes / 1e6).toFixed(2)} MB/s (${Math.round(cliBytes)} bytes/s)`,
  );
  console.log(
    `streaming HTTP convert, 2 in flight:       ${(files.length / http).toFixed(1)} files/s, ${(httpBytes / 1e6).toFixed(2)} MB/s (${Math.round(httpBytes)} bytes/s)`,
  );
  console.log(`ratio CLI/HTTP: ${(cliBytes / httpBytes).toFixed(3)}; load average ${load()}`);
  printResult({
    name: 'archive-batch',
    metric: `keyward migrate --cleanup of ${files.length} files in ${FORMS.length} archive forms, 2 worker processes`,
    value: Number((cliBytes / 1e6).toFixed(2)),
    baseline: 'streaming HTTP convert of the same files, 2 requests in flight',
    baselineValue: Number((httpBytes / 1e6).toFixed(2)),
    ratio: Number((cliBytes / httpBytes).toFixed(3)),
    unit: 'MB/s',
    notes: `${(totalBytes / 1e6).toFixed(1)} MB in ${files.length} files (4 KiB-4 MiB of content); files/s CLI ${cliFiles.toFixed(1)}, HTTP ${(files.length / http).toFixed(1)}; bytes/s CLI ${Math.round(cliBytes)}; every output verified with jose, ${contents} SignedData .content equal, 0 objects left; CLI -c 4 --poll 100, workers concurrency 1; storage DATA_DIR, Postgres`,
  });
} finally {
  for (const stop of stoppers.reverse())
    await stop().catch((err: Error) => console.error(`cleanup: ${err.message}`));
  ssl.cleanup();
}
