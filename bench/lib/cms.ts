/**
 * CMS inputs, OpenSSL baselines, a server's RSS and CPU from /proc, and the streaming convert
 * request, shared by the benches that convert PKCS#7 over HTTP (pkcs7, embedded).
 */
import { execFileSync, spawn } from 'node:child_process';
import { createPublicKey, createVerify, randomFillSync } from 'node:crypto';
import {
  closeSync,
  createReadStream,
  openSync,
  readdirSync,
  readFileSync,
  statfsSync,
  writeSync,
} from 'node:fs';
import { encryptArgs, signArgs } from '../../support/fixtures/cms.ts';

const MiB = 1024 * 1024;
/** The system OpenSSL, the baseline of every CMS figure. */
export const OPENSSL = '/usr/bin/openssl';

/** Bytes free for an unprivileged user under `dir`. */
export function freeBytes(dir: string): number {
  const s = statfsSync(dir);
  return s.bavail * s.bsize;
}

/** Runs openssl in `cwd`, failing with its stderr. */
export function openssl(cwd: string, args: string[]): void {
  execFileSync(OPENSSL, args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

/** Writes `bytes` of CSPRNG output to a file in 8 MiB pieces. */
export function randomFile(path: string, bytes: number): void {
  const fd = openSync(path, 'w');
  const buf = Buffer.alloc(8 * MiB);
  try {
    for (let left = bytes; left > 0; left -= buf.length) {
      const n = Math.min(left, buf.length);
      randomFillSync(buf, 0, n);
      writeSync(fd, buf, 0, n);
    }
  } finally {
    closeSync(fd);
  }
}

/** A self-signed RSA 2048 certificate and key in `cwd` (cert.pem, key.pem); returns both as one PEM. */
export function makeRsaCert(cwd: string): Buffer {
  openssl(cwd, [
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    'key.pem',
    '-out',
    'cert.pem',
    '-subj',
    '/CN=bench/O=Keyward Bench',
    '-days',
    '2',
  ]);
  return Buffer.concat([readFileSync(`${cwd}/key.pem`), readFileSync(`${cwd}/cert.pem`)]);
}

/** The files makeRsaCert writes, as the cms fixtures name a key. */
export const BENCH_KEY = { certFile: 'cert.pem', keyFile: 'key.pem' };

/** `openssl cms -encrypt -binary -aes256 -stream -outform DER` of `plain` to cert.pem. */
export function envelop(cwd: string, plain: string, out: string): void {
  openssl(
    cwd,
    encryptArgs(plain, {
      to: { recip: BENCH_KEY },
      cipher: 'aes256',
      binary: true,
      stream: true,
      outform: 'DER',
      out,
    }),
  );
}

/**
 * `openssl cms -sign -binary -nodetach -stream -md sha256 -outform DER` of `plain` with cert.pem
 * and key.pem: an attached SignedData (RSA, signed attributes), its content BER of indefinite length.
 */
export function signAttached(cwd: string, plain: string, out: string): void {
  openssl(
    cwd,
    signArgs(plain, {
      by: BENCH_KEY,
      detached: false,
      md: 'sha256',
      binary: true,
      stream: true,
      outform: 'DER',
      out,
    }),
  );
}

/** Checks the JWS answer of a SignedData conversion over the content on disk (outside any timing). */
export async function verifyJws(
  jwsText: string,
  contentFile: string,
  certPem: Buffer,
): Promise<boolean> {
  const jws = JSON.parse(jwsText) as { protected: string; signature: string };
  const v = createVerify('sha256').update(`${jws.protected}.`);
  for await (const c of createReadStream(contentFile, { highWaterMark: 4 * MiB }))
    v.update(c as Buffer);
  return v.verify(createPublicKey(certPem), Buffer.from(jws.signature, 'base64url'));
}

/** The `openssl cms -decrypt` arguments of the decrypt baseline (output to /dev/null). */
export function decryptArgs(file: string): string[] {
  return [
    'cms',
    '-decrypt',
    '-binary',
    '-inform',
    'DER',
    '-in',
    file,
    '-recip',
    'cert.pem',
    '-inkey',
    'key.pem',
    '-out',
    '/dev/null',
  ];
}

/** Runs openssl under /usr/bin/time: wall seconds and peak RSS in MB. */
export function timedOpenssl(
  cwd: string,
  args: string[],
): Promise<{ seconds: number; peakMb: number }> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn('/usr/bin/time', ['-f', 'maxrss_kb=%M', OPENSSL, ...args], {
      cwd,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let err = '';
    child.stderr.on('data', (c: Buffer) => {
      err += c.toString();
    });
    child.once('close', (code) => {
      const seconds = (performance.now() - t0) / 1000;
      const m = /maxrss_kb=(\d+)/.exec(err);
      if (code !== 0)
        reject(new Error(`openssl ${args[1]} failed (${code}): ${err.slice(0, 500)}`));
      else resolve({ seconds, peakMb: m ? Number(m[1]) / 1024 : Number.NaN });
    });
  });
}

/** One field of /proc/<pid>/status in MB (VmRSS now, VmHWM the peak since the process's exec). */
export function procMb(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : 0;
}

/** The resident set of a process now, in MB. */
export const rssNow = (pid: number): number => procMb(pid, 'VmRSS');

/** Samples a process's resident set every 20 ms from /proc until stopped; peak in MB. */
export function rssSampler(pid: number): { stop(): number } {
  let peak = 0;
  const read = () => {
    try {
      peak = Math.max(peak, rssNow(pid));
    } catch {
      // the process is gone
    }
  };
  read();
  const timer = setInterval(read, 20);
  return { stop: () => (clearInterval(timer), read(), peak) };
}

/** User plus system CPU seconds a process has used (/proc/<pid>/stat, 100 ticks per second). */
export function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8')
    .replace(/^.*\) /, '')
    .split(' ');
  // After the command: state is field 3, utime 14 and stime 15 (proc(5)).
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** The pids of a process's living descendants (/proc/<pid>/task/<tid>/children, proc(5)). */
function descendants(pid: number): number[] {
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return [];
  }
  const kids = tasks.flatMap((tid) => {
    try {
      return readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8')
        .split(' ')
        .filter(Boolean)
        .map(Number);
    } catch {
      return [];
    }
  });
  return kids.flatMap((k) => [k, ...descendants(k)]);
}

/**
 * CPU seconds of a process and of its living descendants (the API's embedded database runs in a
 * child process of its own); a descendant that exits between two readings drops out of the sum.
 */
export function treeCpuSeconds(pid: number): number {
  return [pid, ...descendants(pid)].reduce((sum, p) => {
    try {
      return sum + cpuSeconds(p);
    } catch {
      return sum;
    }
  }, 0);
}

/** The answer of one convert request. */
export interface Converted {
  seconds: number;
  bytesOut: number;
  status: number;
  tail: Buffer;
  head: Buffer;
}

/**
 * Streams `file` from disk as the file part of a convert request with curl and reads the answer,
 * keeping its first 4 KiB and last 256 bytes. curl, not node:http: on these 2 cores a Node client
 * took 3.3 s of CPU to send and receive 1 GiB (the server took 2.7 s), so it measured itself.
 */
export function convertOverHttp(
  url: string,
  token: string,
  file: string,
  metadata = '{}',
): Promise<Converted> {
  const target = new URL('/api/v3/migration/stream/convert-pkcs7-to-jose', url).href;
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const curl = spawn(
      'curl',
      [
        '-sS',
        '--no-buffer',
        '-X',
        'POST',
        target,
        '-H',
        `authorization: Bearer ${token}`,
        '-H',
        'Expect:',
        '--form-string',
        `metadata=${metadata}`,
        '-F',
        `file=@${file};type=application/pkcs7-mime;filename=input.p7m`,
        '-o',
        '-',
        '-w',
        '\n%{http_code}',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let bytesOut = 0;
    let first: Buffer | null = null;
    let last = Buffer.alloc(0);
    let err = '';
    curl.stdout.on('data', (c: Buffer) => {
      bytesOut += c.length;
      first ??= Buffer.from(c.subarray(0, 4096));
      last = Buffer.concat([last, c.subarray(-256)]).subarray(-256);
    });
    curl.stderr.on('data', (c: Buffer) => {
      err += c.toString();
    });
    curl.once('error', reject);
    curl.once('close', (code) => {
      const seconds = (performance.now() - t0) / 1000;
      if (code !== 0) return reject(new Error(`curl exited ${code}: ${err}`));
      // -w appended "\n<status>" after the body.
      const m = /\n(\d{3})$/.exec(last.toString('latin1'));
      if (!m) return reject(new Error('curl printed no status'));
      const suffix = m[0].length;
      const tail = last.subarray(0, last.length - suffix);
      const head =
        first && bytesOut - suffix < first.length
          ? first.subarray(0, bytesOut - suffix)
          : (first ?? Buffer.alloc(0));
      resolve({ seconds, bytesOut: bytesOut - suffix, status: Number(m[1]), tail, head });
    });
  });
}

/**
 * The cheapest client of a convert request: curl streams `file` from disk and writes the answer
 * to /dev/null, reporting only the status and the bytes received, so no Node process reads the
 * answer through a pipe (that cost as much CPU as the server's conversion). A cut answer makes
 * curl fail (a chunked body without its last chunk), which rejects here.
 */
export function convertDiscarding(
  url: string,
  token: string,
  file: string,
): Promise<{ seconds: number; status: number; bytesOut: number }> {
  const target = new URL('/api/v3/migration/stream/convert-pkcs7-to-jose', url).href;
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const curl = spawn(
      'curl',
      [
        '-sS',
        '-X',
        'POST',
        target,
        '-H',
        `authorization: Bearer ${token}`,
        '-H',
        'Expect:',
        '--form-string',
        'metadata={}',
        '-F',
        `file=@${file};type=application/pkcs7-mime;filename=input.p7m`,
        '-o',
        '/dev/null',
        '-w',
        '%{http_code} %{size_download}',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    let err = '';
    curl.stdout.on('data', (c: Buffer) => (out += c.toString()));
    curl.stderr.on('data', (c: Buffer) => (err += c.toString()));
    curl.once('error', reject);
    curl.once('close', (code) => {
      const seconds = (performance.now() - t0) / 1000;
      const m = /^(\d{3}) (\d+)$/.exec(out.trim());
      if (code !== 0 || !m) return reject(new Error(`curl exited ${code}: ${err} ${out}`));
      resolve({ seconds, status: Number(m[1]), bytesOut: Number(m[2]) });
    });
  });
}

/** Imports the PEM key and certificate into the tenant through the real endpoint. */
export async function importKey(
  url: string,
  adminToken: string,
  tenantId: string,
  pem: Buffer,
  kid: string,
  usage: 'sign' | 'encrypt',
): Promise<void> {
  const body = new FormData();
  body.append('keystore', new Blob([new Uint8Array(pem)]), 'bench.pem');
  body.append('kid', kid);
  body.append('usage', usage);
  const r = await fetch(`${url}/api/v3/admin/tenants/${tenantId}/keys/import-keystore`, {
    method: 'POST',
    headers: { authorization: `Bearer ${adminToken}` },
    body,
  });
  if (r.status !== 201) throw new Error(`import-keystore: ${r.status} ${await r.text()}`);
}
