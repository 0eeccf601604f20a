/**
 * A rewrap interrupted by a database outage: the instance reaches the machine's
 * Postgres through a TCP proxy the test cuts in the middle of the rewrap (never the server
 * itself). The run stops as failed, with its error in the log and in the status; every item is
 * either as it was or sealed once under the newest id, and all of them open; once the database
 * is back the next run finishes the rest.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import knexFactory, { type Knex } from 'knex';
import { startTestApp, type TestApp } from '../../../support/app.ts';
import {
  SHARED_POSTGRES_URL,
  createPostgresDatabase,
  type TestDatabase,
} from '../../../support/database.ts';
import { adminToken, api, makeTenant, userToken } from '../../../support/auth.ts';
import { startTcpProxy, type TcpProxy } from '../../support/tcp-proxy.ts';
import { createKeyring } from '../../../shared/crypto/master-key.ts';
import { SEALED_SOURCES } from '../../../shared/keys/sealed-items.ts';
import { addVersions, sealedIds } from './sealed-items.ts';
import { sleep } from '../../support/time.ts';

const A = randomBytes(32).toString('base64');
const B = randomBytes(32).toString('base64');
const RING = { KEYWARD_MASTER_KEY: `k2:${B},k1:${A}` };

let db: TestDatabase;
let proxy: TcpProxy;
let direct: Knex;
let app: TestApp | undefined;
const dataDir = mkdtempSync(join(tmpdir(), 'keyward-mk-outage-'));

beforeAll(async () => {
  db = await createPostgresDatabase(SHARED_POSTGRES_URL);
  direct = knexFactory({ client: 'pg', connection: db.url!, pool: { min: 0, max: 2 } });
  const seeder = await startTestApp(
    { KEYWARD_MASTER_KEY: `k1:${A}` },
    { databaseUrl: db.url, dataDir },
  );
  try {
    const t = await makeTenant(seeder, ['admin.keys.create']);
    const r = await api(
      seeder,
      'POST',
      `/api/v3/admin/tenants/${t.tenantId}/keys`,
      await userToken(seeder, t),
      { kid: 'bulk', type: 'aes-256' },
    );
    expect(r.status).toBe(201);
    await addVersions(seeder.ctx.db, t.tenantId, 'bulk', 3000, 'k1', A);
  } finally {
    await seeder.stop();
  }
  const url = new URL(db.url!);
  proxy = await startTcpProxy({ host: url.hostname, port: Number(url.port || 5432) });
  url.hostname = '127.0.0.1';
  url.port = String(proxy.port);
  app = await startTestApp(RING, { databaseUrl: url.toString(), dataDir });
}, 120_000);

afterAll(async () => {
  proxy?.accept();
  await app?.stop();
  await proxy?.close();
  await direct?.destroy();
  await db?.drop();
  rmSync(dataDir, { recursive: true, force: true });
});

/** Every sealed item, read past the proxy, opens under the keyring of both ids. */
async function everyItemOpens(): Promise<number> {
  const ring = createKeyring([
    { id: 'k2', key: Buffer.from(B, 'base64') },
    { id: 'k1', key: Buffer.from(A, 'base64') },
  ]);
  let n = 0;
  for (const s of SEALED_SOURCES)
    for (const row of (await s.select(direct)) as Array<Record<string, unknown>>) {
      expect(() => ring.open(row.material as Buffer, s.context(row))).not.toThrow();
      n++;
    }
  return n;
}

describe('when the database goes away in the middle of a rewrap', () => {
  it('then the run stops as failed with its error logged and shown, every item still opens, and after the database returns the next run finishes', async () => {
    const ctx = app!.ctx;
    const token = await adminToken(app!);
    const total = (await sealedIds(direct)).length;
    const k1Before = (await sealedIds(direct)).filter((id) => id === 'k1').length;
    expect(k1Before).toBeGreaterThan(3000);

    ctx.rewrap.start();
    while (ctx.rewrap.progress().rewrapped < 200 && ctx.rewrap.progress().state === 'running')
      await sleep(5);
    proxy.refuse();
    while (ctx.rewrap.progress().state === 'running') await sleep(50);
    const stopped = ctx.rewrap.progress();
    expect(stopped.state).toBe('failed');
    expect(stopped.error).toMatch(
      /^the database became unavailable .*; every item is still readable: run the rewrap again once it is back$/,
    );
    expect(stopped.rewrapped).toBeGreaterThanOrEqual(200);
    expect(app!.logText()).toContain('master-key rewrap failed');

    proxy.accept();
    // The status tells the operator the run failed and what is left under k1.
    const status = await api(app!, 'GET', '/api/v3/admin/platform/master-key', token);
    expect(status.status).toBe(200);
    expect(status.body.rewrap).toMatchObject({ state: 'failed', error: stopped.error });
    const ids = await sealedIds(direct);
    expect(ids).toHaveLength(total);
    const leftK1 = ids.filter((id) => id === 'k1').length;
    expect(leftK1).toBeGreaterThan(0);
    // Each item is under k1 or k2, never lost; the interrupted item was either written or not.
    expect(ids.filter((id) => id === 'k2').length).toBe(total - leftK1);
    expect(await everyItemOpens()).toBe(total);

    const rest = await ctx.rewrap.run();
    expect([rest.state, rest.rewrapped, rest.raced, rest.unopenable]).toEqual([
      'done',
      leftK1,
      0,
      0,
    ]);
    expect(new Set(await sealedIds(direct))).toEqual(new Set(['k2']));
    expect(await everyItemOpens()).toBe(total);
  }, 180_000);
});
