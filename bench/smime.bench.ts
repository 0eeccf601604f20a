/**
 * An EnvelopedData as mail archives hold it: `openssl cms -encrypt -binary -aes256
 * -stream` without -outform, i.e. an S/MIME entity whose body is the base64 of the BER
 * EnvelopedData (about 1.35x the content), converted over HTTP against `openssl cms -decrypt` of
 * the same S/MIME file (OpenSSL reads SMIME by default), same run. Ours: a real API process with
 * the key imported through import-keystore, the file streamed by curl as the file part of
 * convert-pkcs7-to-jose (bench/lib/cms.ts, as the pkcs7 bench), the server's RSS sampled from
 * /proc every 20 ms. Targets: ratio <= 0.5, server peak RSS < 200 MB on Postgres.
 *
 * BENCH_SMIME_MIB sets the content size (default 1024); BENCH_DATABASE_URL (a Postgres server
 * URL) runs the service on a fresh database there, else on the embedded PGlite.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import knexFactory from 'knex';
import { platformAdmin, startKeyward } from './lib/keyward.ts';
import { printResult } from './lib/result.ts';
import {
  OPENSSL,
  convertOverHttp,
  cpuSeconds,
  freeBytes,
  importKey,
  makeRsaCert,
  openssl,
  randomFile,
  rssNow,
  rssSampler,
  timedOpenssl,
} from './lib/cms.ts';

const MiB = 1024 * 1024;
const SIZE = Number(process.env.BENCH_SMIME_MIB ?? 1024) * MiB;
const PG = process.env.BENCH_DATABASE_URL;
const work = mkdtempSync('/tmp/keyward-smime-bench-');
const dbName = `kw_bench_smime_${randomBytes(4).toString('hex')}`;
const fmt = (n: number, d = 2) => n.toFixed(d);
const load = () =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');

async function pgAdmin(sql: string): Promise<void> {
  const k = knexFactory({ client: 'pg', connection: PG, pool: { min: 0, max: 1 } });
  try {
    await k.raw(sql);
  } finally {
    await k.destroy();
  }
}

/** The S/MIME EnvelopedData of `plain` (base64 body, streamed BER inside). */
function smime(plain: string, out: string): void {
  openssl(work, [
    'cms',
    '-encrypt',
    '-binary',
    '-aes256',
    '-stream',
    '-in',
    plain,
    '-out',
    out,
    '-recip',
    'cert.pem',
  ]);
}

try {
  const need = 3 * SIZE + 512 * MiB;
  const free = freeBytes('/tmp');
  console.log(
    `smime: ${fmt(SIZE / MiB, 0)} MiB content, ${fmt(free / 2 ** 30, 1)} GiB free under /tmp, Node ${process.version}, ${execFileSync(OPENSSL, ['version']).toString().trim()}, database ${PG ? 'Postgres' : 'PGlite (embedded default)'}, load average ${load()}`,
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
  });
  try {
    const pid = keyward.child.process.pid!;
    const { tenantId, token: admin } = await platformAdmin(keyward);
    await importKey(keyward.url, admin, tenantId, pem, 'bench-rsa', 'encrypt');

    const ours = async (file: string) => {
      const idleMb = rssNow(pid);
      const cpu0 = cpuSeconds(pid);
      const sampler = rssSampler(pid);
      const r = await convertOverHttp(keyward.url, admin, file);
      const peakMb = sampler.stop();
      if (r.status !== 200) throw new Error(`HTTP ${r.status} ${r.head.toString().slice(0, 300)}`);
      return { r, idleMb, peakMb, cpu: cpuSeconds(pid) - cpu0 };
    };

    randomFile(join(work, 'warm.bin'), 4 * MiB);
    smime('warm.bin', 'warm.eml');
    await ours(join(work, 'warm.eml'));

    const t0 = performance.now();
    randomFile(join(work, 'plain.bin'), SIZE);
    smime('plain.bin', 'env.eml');
    rmSync(join(work, 'plain.bin'));
    const file = join(work, 'env.eml');
    const fileBytes = statSync(file).size;
    console.log(
      `  made the S/MIME input in ${fmt((performance.now() - t0) / 1000, 1)} s: ${fmt(fileBytes / MiB, 1)} MiB of base64 mail`,
    );
    const ssl = await timedOpenssl(work, [
      'cms',
      '-decrypt',
      '-binary',
      '-in',
      file,
      '-recip',
      'cert.pem',
      '-inkey',
      'key.pem',
      '-out',
      '/dev/null',
    ]);
    const o = await ours(file);
    const closed = /------service-[0-9a-f-]{36}--\r\n$/.test(o.r.tail.toString('latin1'));
    const ratio = o.r.seconds / ssl.seconds;
    console.log(
      `  ours: ${fmt(o.r.seconds)} s, ${fmt(fileBytes / 1e6 / o.r.seconds, 0)} MB/s of mail in, server RSS ${fmt(o.idleMb, 0)} MB idle, ${fmt(o.peakMb, 0)} MB peak (+${fmt(o.peakMb - o.idleMb, 0)} MB), server CPU ${fmt(o.cpu)} s | openssl cms -decrypt ${fmt(ssl.seconds)} s, ${fmt(ssl.peakMb, 0)} MB peak | ratio ${fmt(ratio, 3)} (target <= 0.5)`,
    );
    console.log(
      `  checks: JWE answer ${fmt(o.r.bytesOut / MiB, 1)} MiB with its closing delimiter: ${closed}`,
    );
    console.log(
      `smime: ratio ${fmt(ratio, 3)} (target <= 0.5), server peak RSS ${fmt(o.peakMb, 0)} MB (target < 200 MB, ${PG ? 'Postgres' : 'PGlite'}); load average ${load()}`,
    );
    if (!closed) throw new Error('the conversion output failed its check');
    printResult({
      name: 'smime',
      metric: `${fmt(SIZE / MiB, 0)} MiB EnvelopedData as S/MIME base64 to A256GCM JWE over HTTP, seconds`,
      value: Number(fmt(o.r.seconds, 3)),
      baseline: 'openssl cms -decrypt, same S/MIME file',
      baselineValue: Number(fmt(ssl.seconds, 3)),
      ratio: Number(fmt(ratio, 3)),
      unit: 's',
      target: { op: '<=', value: 0.5, of: 'ratio', issue: 13 },
      notes: `${fmt(fileBytes / MiB, 1)} MiB of mail; server CPU ${fmt(o.cpu)} s; ${PG ? 'Postgres' : 'PGlite'}`,
    });
    printResult({
      name: 'smime-rss',
      metric: `server peak RSS through the ${fmt(SIZE / MiB, 0)} MiB S/MIME conversion, MB`,
      value: Number(fmt(o.peakMb, 0)),
      baseline: 'openssl cms -decrypt peak RSS, same file',
      baselineValue: Number(fmt(ssl.peakMb, 0)),
      ratio: Number(fmt(o.peakMb / ssl.peakMb, 3)),
      unit: 'MB',
      target: { op: '<', value: 200, of: 'value', issue: 13 },
      notes: `+${fmt(o.peakMb - o.idleMb, 0)} MB over idle, ${PG ? 'Postgres' : 'PGlite'}`,
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
