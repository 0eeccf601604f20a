/**
 * The master keyring's figures on `npm start`'s defaults (the embedded database):
 * - rewrap items/s over BENCH_VERSIONS key versions (default 100,000 over 100 keys, sealed under
 *   k1 with the service stopped), with the encrypt latency (1 KiB, AES-256, p50 and p99) measured during the
 *   rewrap against the same load without one, alternated: alone just before the rewrap and again
 *   just after it, so a machine whose load drifts during the run weighs on both sides;
 * - backup MB/s and rows/s (`keyward backup`'s path: the API's snapshot, encrypted client-side);
 * - restore MB/s and rows/s into an empty DATA_DIR.
 * BENCH_SECONDS (default 4) is the length of each encrypt window without a rewrap.
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { randomBytes, randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runLoad, chooseTool, type LoadResult } from './lib/load.ts';
import { printResult } from './lib/result.ts';
import { platformAdmin, provision, startKeyward } from './lib/keyward.ts';
import { openDatabase } from '../shared/db/knex.ts';
import { createKeyring } from '../shared/crypto/master-key.ts';
import { KeywardClient } from '../bin/lib/client.ts';
import { downloadBackup, fileSource } from '../bin/lib/backup.ts';
import { restoreBackup } from '../shared/backup/restore.ts';

const versions = Number(process.env.BENCH_VERSIONS ?? 100_000);
const seconds = Number(process.env.BENCH_SECONDS ?? 4);
const SEED_KEYS = 100;
const tool = chooseTool();
const K1 = randomBytes(32);
const K2 = randomBytes(32);
const ring1 = `k1:${K1.toString('base64')}`;
const ring2 = `k2:${K2.toString('base64')},${ring1}`;
const dir = mkdtempSync(join(tmpdir(), 'keyward-bench-mk-'));
const dataDir = join(dir, 'data');
const fmt = (r: LoadResult) =>
  `${Math.round(r.requestsPerSecond)} req/s, p50 ${r.p50Ms.toFixed(2)} ms, p99 ${r.p99Ms.toFixed(2)} ms`;

async function login(url: string, tenantId: string, password: string): Promise<string> {
  const r = await fetch(`${url}/api/v3/auth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'password',
      username: 'bench@keyward.local',
      password,
      tenant_id: tenantId,
    }),
  });
  return ((await r.json()) as { access_token: string }).access_token;
}

try {
  // 1. First start: bootstrap, a tenant, its key, a workload token.
  const first = await startKeyward({ DATA_DIR: dataDir, KEYWARD_MASTER_KEY: ring1 });
  const { tenantId: platformTenant } = await platformAdmin(first);
  // The encrypt load uses `aes`; the versions to rewrap belong to SEED_KEYS other keys, as a
  // tenant's rotated keys would (100,000 versions of the one encrypt key would measure loading
  // them into the key cache, not the rewrap beside the traffic).
  const seedKids = Array.from({ length: SEED_KEYS }, (_, i) => `seed-${i}`);
  const t = await provision(
    first,
    ['crypto.encrypt'],
    [{ kid: 'aes', type: 'aes-256' }, ...seedKids.map((kid) => ({ kid, type: 'aes-256' }))],
  );
  const password = first.adminPassword;
  await first.stop();

  // 2. With the service stopped, the seed keys get `versions` more versions sealed under k1.
  const db = await openDatabase({ dataDir });
  const seeds = await db('keys').where({ tenant_id: t.tenantId }).whereIn('kid', seedKids);
  const k1 = createKeyring([{ id: 'k1', key: K1 }]);
  const perKey = Math.ceil(versions / seeds.length);
  let rows: Array<Record<string, unknown>> = [];
  for (const key of seeds)
    for (let version = 2; version < 2 + perKey; version++) {
      rows.push({
        id: randomUUID(),
        key_id: key.id,
        version,
        material: k1.seal(randomBytes(32), { tenantId: t.tenantId, kid: key.kid, version }),
      });
      if (rows.length === 1000) {
        await db('key_versions').insert(rows);
        rows = [];
      }
    }
  if (rows.length > 0) await db('key_versions').insert(rows);
  await db.destroy();

  // 3. Restart with k2 in front: encrypt alone, then encrypt during the rewrap.
  const k = await startKeyward({ DATA_DIR: dataDir, KEYWARD_MASTER_KEY: ring2 });
  let backupFile = '';
  let b = { bytes: 0, plaintextBytes: 0, seconds: 0 };
  try {
    const admin = await login(k.url, platformTenant, password);
    const encrypt = (secs: number, signal?: AbortSignal) =>
      runLoad({
        url: `${k.url}/api/v3/crypto/encrypt`,
        connections: 16,
        seconds: secs,
        tool,
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${t.token}` },
        body: JSON.stringify({ kid: 'aes', data: randomBytes(1024).toString('base64') }),
        signal,
      });
    await encrypt(1);
    const alone = await encrypt(seconds);
    const auth = { authorization: `Bearer ${admin}` };
    const started = performance.now();
    await fetch(`${k.url}/api/v3/admin/platform/master-key/rewrap`, {
      method: 'POST',
      headers: auth,
    });
    const stop = new AbortController();
    // At most 60 s (bench/lib/load.ts), stopped earlier when the rewrap ends.
    const during = encrypt(60, stop.signal);
    let progress: { state: string; rewrapped: number } = { state: 'running', rewrapped: 0 };
    while (progress.state === 'running') {
      await new Promise((r) => setTimeout(r, 250));
      progress = (
        (await (
          await fetch(`${k.url}/api/v3/admin/platform/master-key`, { headers: auth })
        ).json()) as { rewrap: typeof progress }
      ).rewrap;
    }
    const rewrapSeconds = (performance.now() - started) / 1000;
    stop.abort();
    if (progress.state !== 'done') throw new Error(`the rewrap ended ${progress.state}`);
    const load = await during;
    const after = await encrypt(seconds);
    const perSecond = progress.rewrapped / rewrapSeconds;
    const aloneP50 = (alone.p50Ms + after.p50Ms) / 2;
    const aloneP99 = (alone.p99Ms + after.p99Ms) / 2;
    console.log(
      `rewrap: ${progress.rewrapped} items in ${rewrapSeconds.toFixed(1)} s = ${Math.round(perSecond)} items/s (state ${progress.state})`,
    );
    console.log(
      `encrypt alone before: ${fmt(alone)}; during the rewrap: ${fmt(load)}; alone after: ${fmt(after)}`,
    );
    console.log(
      `encrypt during/alone: p50 ${(load.p50Ms / aloneP50).toFixed(2)}x, p99 ${(load.p99Ms / aloneP99).toFixed(2)}x`,
    );
    printResult({
      name: 'master-key-rewrap',
      metric: `rewrap of ${versions} key versions under the newest key, embedded database, under encrypt load`,
      value: Math.round(perSecond),
      baseline: 'none (items/s)',
      baselineValue: Math.round(perSecond),
      ratio: 1,
      unit: 'items/s',
      notes: `${progress.rewrapped} items in ${rewrapSeconds.toFixed(1)} s`,
    });
    printResult({
      name: 'encrypt-during-rewrap',
      metric:
        'encrypt p99 (1 KiB, AES-256, 16 connections) during the rewrap (its first 60 s at most)',
      value: Number(load.p99Ms.toFixed(2)),
      baseline: 'encrypt p99 without a rewrap (mean of the windows just before and just after)',
      baselineValue: Number(aloneP99.toFixed(2)),
      ratio: Number((load.p99Ms / aloneP99).toFixed(2)),
      unit: 'ms',
      notes: `${tool}; before ${fmt(alone)}; during ${fmt(load)}; after ${fmt(after)}; p50 ratio ${(load.p50Ms / aloneP50).toFixed(2)}`,
    });

    // 4. Backup through the API, encrypted client-side.
    backupFile = join(dir, 'bench.kwbackup');
    const client = new KeywardClient({ url: k.url, tokens: { token: async () => admin } });
    b = await downloadBackup(client, backupFile, 'bench passphrase of length');
  } finally {
    await k.stop();
  }

  // 5. Restore into an empty DATA_DIR.
  const t0 = performance.now();
  const report = await restoreBackup({
    open: fileSource(backupFile),
    passphrase: 'bench passphrase of length',
    target: { dataDir: join(dir, 'restored') },
  });
  const s = (performance.now() - t0) / 1000;
  const mbps = (bytes: number, secs: number) => Number((bytes / 1e6 / secs).toFixed(2));
  console.log(
    `backup: ${(b.plaintextBytes / 1e6).toFixed(1)} MB of snapshot (${(b.bytes / 1e6).toFixed(1)} MB file) in ${b.seconds.toFixed(1)} s = ${mbps(b.plaintextBytes, b.seconds)} MB/s, ${Math.round(report.rows / b.seconds)} rows/s`,
  );
  printResult({
    name: 'backup',
    metric: 'keyward backup through the API (snapshot, spool, client-side encryption), embedded',
    value: mbps(b.plaintextBytes, b.seconds),
    baseline: 'none (MB/s of snapshot)',
    baselineValue: mbps(b.plaintextBytes, b.seconds),
    ratio: 1,
    unit: 'MB/s',
    notes: `${Math.round(report.rows / b.seconds)} rows/s over ${report.rows} rows; file ${statSync(backupFile).size} bytes`,
  });
  console.log(
    `restore: ${report.rows} rows, ${(report.bytes / 1e6).toFixed(1)} MB in ${s.toFixed(1)} s = ${(report.bytes / 1e6 / s).toFixed(1)} MB/s, ${Math.round(report.rows / s)} rows/s (two passes: verify, then load)`,
  );
  printResult({
    name: 'restore',
    metric: 'keyward restore into an empty DATA_DIR (verify pass + load pass)',
    value: Number((report.bytes / 1e6 / s).toFixed(2)),
    baseline: 'none (MB/s of snapshot)',
    baselineValue: Number((report.bytes / 1e6 / s).toFixed(2)),
    ratio: 1,
    unit: 'MB/s',
    notes: `${Math.round(report.rows / s)} rows/s over ${report.rows} rows`,
  });
} finally {
  rmSync(dir, { recursive: true, force: true });
}
