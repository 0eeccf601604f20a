/**
 * Key settings and automatic rotation: PATCH of description, rotationPeriodDays and
 * minDecryptionVersion; key records with their schedule; the scheduler rotating a due key once
 * with two instances on one Postgres; and unknown JSON members refused on every admin endpoint.
 */
import { randomUUID } from 'node:crypto';
import { startTestApp, type TestApp } from '../../../support/app.ts';
import {
  TEST_ENGINE,
  SHARED_POSTGRES_URL,
  createPostgresDatabase,
  type TestDatabase,
} from '../../../support/database.ts';
import {
  adminToken,
  api,
  makeTenant,
  userToken,
  workloadToken,
  type TestTenant,
} from '../../../support/auth.ts';
import { storeKey } from '../../../api/services/keys/store.ts';
import { generateKeyMaterial } from '../../../shared/crypto/material.ts';
import { sleep } from '../../support/time.ts';

const DAY = 86_400_000;
const ADMIN = [
  'admin.keys.read',
  'admin.keys.create',
  'admin.keys.rotate',
  'admin.keys.suspend',
  'admin.keys.update',
  'admin.keys.orchestrate',
  'admin.policy.overrides.write',
  'admin.workloads.create',
  'admin.workloads.rotate-secret',
  'admin.roles.create',
  'admin.roles.read',
  'admin.roles.update',
  'admin.humanuser',
  'admin.cryptographicexchange.create',
  'admin.cryptographicexchange.accept',
  'admin.cryptographicexchange.reject',
  'admin.cryptographicexchange.cancel',
  'crypto.encrypt',
  'crypto.decrypt',
  'crypto.sign',
  'crypto.verify',
];
const data = Buffer.from('settings matter').toString('base64');

type Key = Record<string, unknown> & {
  kid: string;
  currentVersion: number;
  nextRotationAt: string | null;
  minDecryptionVersion: number;
};

describe(`key settings, minDecryptionVersion and unknown admin members (${TEST_ENGINE})`, () => {
  let app: TestApp;
  let t: TestTenant;
  let admin: string;
  let core: string;
  let base: string;
  const patch = (kid: string, body: unknown, token = admin) =>
    api(app, 'PATCH', `${base}/${kid}`, token, body);
  const read = async (kid: string) => (await api(app, 'GET', `${base}/${kid}`, admin)).body as Key;

  beforeAll(async () => {
    app = await startTestApp();
    t = await makeTenant(app, ADMIN);
    admin = await userToken(app, t);
    core = await workloadToken(app, t);
    base = `/api/v3/admin/tenants/${t.tenantId}/keys`;
  });
  afterAll(async () => {
    await app.stop();
  });

  it("when a key is created, then its record shows the policy's rotation period, a rotation one period later and minDecryptionVersion 1, in every admin view", async () => {
    const before = Date.now();
    const created = (await api(app, 'POST', base, admin, { type: 'aes-256', kid: 'fresh' }))
      .body as Key;
    expect(created).toMatchObject({
      description: null,
      rotationPeriodDays: 365,
      rotationPeriodFrom: 'policy',
      lastRotatedAt: null,
      minDecryptionVersion: 1,
    });
    expect(Date.parse(created.nextRotationAt!) - before).toBeGreaterThanOrEqual(365 * DAY - 1000);
    expect(Date.parse(created.nextRotationAt!) - before).toBeLessThan(365 * DAY + 60_000);
    expect(await read('fresh')).toMatchObject({
      rotationPeriodDays: 365,
      nextRotationAt: created.nextRotationAt,
      minDecryptionVersion: 1,
    });
    const listed = ((await api(app, 'GET', base, admin)).body.items as Key[]).find(
      (k) => k.kid === 'fresh',
    );
    expect(listed).toMatchObject({
      rotationPeriodDays: 365,
      rotationPeriodFrom: 'policy',
      nextRotationAt: created.nextRotationAt,
    });
  });

  it('when a key is created with its own description and period, then the record shows them and the rotation follows its period', async () => {
    const r = await api(app, 'POST', base, admin, {
      type: 'aes-256',
      kid: 'own',
      description: 'orders column',
      rotationPeriodDays: 30,
    });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({
      description: 'orders column',
      rotationPeriodDays: 30,
      rotationPeriodFrom: 'key',
    });
    expect(
      Date.parse(r.body.nextRotationAt as string) - Date.parse(r.body.createdAt as string),
    ).toBe(30 * DAY);
  });

  it('when PATCH sets description, rotationPeriodDays and minDecryptionVersion, then 200 with the key record, the settings stay, and key.update is audited', async () => {
    await api(app, 'POST', base, admin, { type: 'aes-256', kid: 'tuned' });
    await api(app, 'POST', `${base}/tuned/rotate`, admin);
    const r = await patch('tuned', {
      description: 'payments',
      rotationPeriodDays: 90,
      minDecryptionVersion: 2,
    });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      kid: 'tuned',
      description: 'payments',
      rotationPeriodDays: 90,
      rotationPeriodFrom: 'key',
      minDecryptionVersion: 2,
      currentVersion: 2,
    });
    expect((r.body.versions as unknown[]).length).toBe(2);
    // Rescheduled from the last rotation.
    expect(
      Date.parse(r.body.nextRotationAt as string) - Date.parse(r.body.lastRotatedAt as string),
    ).toBe(90 * DAY);
    expect(await read('tuned')).toMatchObject({
      description: 'payments',
      rotationPeriodDays: 90,
      minDecryptionVersion: 2,
    });
    const cleared = await patch('tuned', { description: null, rotationPeriodDays: null });
    expect(cleared.body).toMatchObject({
      description: null,
      rotationPeriodDays: 365,
      rotationPeriodFrom: 'policy',
      minDecryptionVersion: 2,
    });
    await app.ctx.audit.flush();
    const events = await app.ctx
      .db('audit_events')
      .where({ tenant_id: t.tenantId, action: 'key.update', target: 'tuned' });
    expect(events.length).toBe(2);
  });

  it('when a PATCH is malformed or out of bounds, then 400 naming the field and nothing changes', async () => {
    await api(app, 'POST', base, admin, { type: 'aes-256', kid: 'guarded', description: 'kept' });
    const before = await read('guarded');
    const bad: Array<[unknown, string]> = [
      [{}, 'at least one'],
      [{ aad: 'x' }, 'aad'],
      [{ description: 'ok', encryptionContext: {} }, 'encryptionContext'],
      [{ description: 5 }, 'description'],
      [{ description: 'x'.repeat(501) }, 'description'],
      [{ rotationPeriodDays: 0 }, 'rotationPeriodDays'],
      [{ rotationPeriodDays: 3651 }, 'rotationPeriodDays'],
      [{ rotationPeriodDays: 10_000 * 365 }, 'rotationPeriodDays'],
      [{ rotationPeriodDays: 1.5 }, 'rotationPeriodDays'],
      [{ rotationPeriodDays: '90' }, 'rotationPeriodDays'],
      [{ minDecryptionVersion: 0 }, 'minDecryptionVersion'],
      [{ minDecryptionVersion: 2 }, 'minDecryptionVersion'],
      [{ minDecryptionVersion: '1' }, 'minDecryptionVersion'],
      [[], 'object'],
    ];
    for (const [body, named] of bad) {
      const r = await patch('guarded', body);
      expect([body, r.status, r.body.type]).toEqual([
        body,
        400,
        expect.stringMatching(/validation-failed$/),
      ]);
      expect([body, r.body.detail]).toEqual([body, expect.stringContaining(named)]);
    }
    expect(await read('guarded')).toEqual(before);
  });

  it('when the key is unknown, then 404; without admin.keys.update, then 403', async () => {
    expect((await patch('nope', { description: 'x' })).status).toBe(404);
    const other = await makeTenant(app, ['admin.keys.read']);
    const reader = await userToken(app, other);
    expect(
      (
        await api(app, 'PATCH', `/api/v3/admin/tenants/${other.tenantId}/keys/any`, reader, {
          description: 'x',
        })
      ).status,
    ).toBe(403);
  });

  it('when an imported key is given a rotation period, then 409 and it stays unscheduled; its description can still change', async () => {
    await storeKey(
      app.ctx,
      t.tenantId,
      { kid: 'imported', type: 'aes-256', usage: 'encrypt', source: 'imported' },
      await generateKeyMaterial('aes-256'),
    );
    expect(await read('imported')).toMatchObject({
      rotationPeriodDays: null,
      rotationPeriodFrom: null,
      nextRotationAt: null,
    });
    const r = await patch('imported', { rotationPeriodDays: 30 });
    expect(r.status).toBe(409);
    expect(r.body.type).toMatch(/invalid-transition$/);
    expect((await patch('imported', { description: 'from the HSM' })).body).toMatchObject({
      description: 'from the HSM',
      nextRotationAt: null,
    });
  });

  it('when minDecryptionVersion is raised to 2, then version 1 ciphertexts answer 409 key-version-retired, and lowering it back decrypts them again (versions are kept)', async () => {
    await api(app, 'POST', base, admin, { type: 'aes-256', kid: 'retire' });
    const v1 = (await api(app, 'POST', '/api/v3/crypto/encrypt', core, { kid: 'retire', data }))
      .body.ciphertext;
    await api(app, 'POST', `${base}/retire/rotate`, admin);
    const v2 = (await api(app, 'POST', '/api/v3/crypto/encrypt', core, { kid: 'retire', data }))
      .body.ciphertext;
    // Warm the runtime cache with minDecryptionVersion 1: the PATCH must reach it.
    expect(
      (await api(app, 'POST', '/api/v3/crypto/decrypt', core, { ciphertext: v1 })).status,
    ).toBe(200);

    expect((await patch('retire', { minDecryptionVersion: 2 })).status).toBe(200);
    const retired = await api(app, 'POST', '/api/v3/crypto/decrypt', core, { ciphertext: v1 });
    expect(retired.status).toBe(409);
    expect(retired.body).toMatchObject({
      type: expect.stringMatching(/key-version-retired$/),
      title: 'Key Version Retired',
    });
    expect(
      (await api(app, 'POST', '/api/v3/crypto/decrypt', core, { ciphertext: v2 })).body,
    ).toMatchObject({ version: 2, data });

    expect((await patch('retire', { minDecryptionVersion: 1 })).status).toBe(200);
    expect(
      (await api(app, 'POST', '/api/v3/crypto/decrypt', core, { ciphertext: v1 })).body,
    ).toMatchObject({ version: 1, data });
  });

  it("when minDecryptionVersion passes a signature's version, then verifying it by that version answers 409 key-version-retired", async () => {
    await api(app, 'POST', base, admin, { type: 'ec-p256', kid: 'signer', usage: 'sign' });
    const sig = (await api(app, 'POST', '/api/v3/crypto/sign', core, { kid: 'signer', data })).body
      .signature;
    await api(app, 'POST', `${base}/signer/rotate`, admin);
    await patch('signer', { minDecryptionVersion: 2 });
    const r = await api(app, 'POST', '/api/v3/crypto/verify', core, {
      kid: 'signer',
      data,
      signature: sig,
      version: 1,
    });
    expect(r.status).toBe(409);
    expect(r.body.type).toMatch(/key-version-retired$/);
  });

  it("when the tenant's policy period changes, then keys following the policy are rescheduled by it and keys with their own period are not", async () => {
    const follow = (await api(app, 'POST', base, admin, { type: 'aes-256', kid: 'follows' }))
      .body as Key & { createdAt: string };
    const own = (await read('own')).nextRotationAt;
    expect(
      (
        await api(app, 'PUT', `/api/v3/admin/tenants/${t.tenantId}/policies/overrides`, admin, {
          rotationPeriodDays: 7,
        })
      ).status,
    ).toBe(200);
    const after = await read('follows');
    expect(after).toMatchObject({ rotationPeriodDays: 7, rotationPeriodFrom: 'policy' });
    expect(Date.parse(after.nextRotationAt!) - Date.parse(follow.createdAt)).toBe(7 * DAY);
    expect((await read('own')).nextRotationAt).toBe(own);
    await api(app, 'PUT', `/api/v3/admin/tenants/${t.tenantId}/policies/overrides`, admin, {});
  });

  it('when a due key is found by the scheduler, then it is rotated once, rescheduled a period later and audited as a rotation by system:scheduler', async () => {
    await api(app, 'POST', base, admin, { type: 'aes-256', kid: 'due-here' });
    await app.ctx
      .db('keys')
      .where({ tenant_id: t.tenantId, kid: 'due-here' })
      .update({ next_rotation_at: new Date(Date.now() - 60_000) });
    expect(await app.ctx.rotation!.runOnce()).toBeGreaterThanOrEqual(1);
    expect(await app.ctx.rotation!.runOnce()).toBe(0);
    const key = await read('due-here');
    expect(key.currentVersion).toBe(2);
    expect(Date.parse(key.nextRotationAt!) - Date.parse(key.lastRotatedAt as string)).toBe(
      365 * DAY,
    );
    await app.ctx.audit.flush();
    const events = await app.ctx
      .db('audit_events')
      .where({ tenant_id: t.tenantId, action: 'key.rotate', target: 'due-here' });
    expect(events.map((e) => e.actor)).toEqual(['system:scheduler']);
  });

  it('when a generated key has no schedule (made before migration 006), then the scheduler gives it one from its creation by its period', async () => {
    const made = (
      await api(app, 'POST', base, admin, {
        type: 'aes-256',
        kid: 'legacy-made',
        rotationPeriodDays: 10,
      })
    ).body as Key & { createdAt: string };
    await app.ctx
      .db('keys')
      .where({ tenant_id: t.tenantId, kid: 'legacy-made' })
      .update({ next_rotation_at: null });
    expect((await read('legacy-made')).nextRotationAt).toBeNull();
    await app.ctx.rotation!.runOnce();
    const key = await read('legacy-made');
    expect(Date.parse(key.nextRotationAt!) - Date.parse(made.createdAt)).toBe(10 * DAY);
    expect(key.currentVersion).toBe(1);
  });

  it('when a suspended or imported key is past its date, then the scheduler leaves it alone', async () => {
    await api(app, 'POST', base, admin, { type: 'aes-256', kid: 'resting' });
    await api(app, 'POST', `${base}/resting/suspend`, admin);
    await app.ctx
      .db('keys')
      .where({ tenant_id: t.tenantId })
      .whereIn('kid', ['resting', 'imported'])
      .update({ next_rotation_at: new Date(Date.now() - 60_000) });
    await app.ctx.rotation!.runOnce();
    expect((await read('resting')).currentVersion).toBe(1);
    expect((await read('imported')).currentVersion).toBe(1);
  });

  it('when any admin JSON body carries a member the endpoint does not know, then 400 validation-failed naming it, and nothing is created or changed', async () => {
    const platform = await adminToken(app);
    await api(app, 'POST', base, admin, { type: 'aes-256', kid: 'k' });
    const T = `/api/v3/admin/tenants/${t.tenantId}`;
    const someId = randomUUID();
    const count = async () =>
      Promise.all(
        [
          'tenants',
          'workloads',
          'roles',
          'users',
          'keys',
          'cryptographic_exchanges',
          'revoked_tokens',
        ].map(async (table) => Number((await app.ctx.db(table).count({ n: '*' }))[0].n)),
      );
    const user = (await app.ctx.db('users').where({ tenant_id: t.tenantId }).first('id')).id;
    const before = await count();
    const keyBefore = (await api(app, 'GET', `${T}/keys/k`, admin)).body;
    const cases: Array<[string, string, string, Record<string, unknown>]> = [
      ['POST', '/api/v3/admin/platform/tenants', platform, { name: 'x', plan: 'gold' }],
      [
        'POST',
        '/api/v3/admin/platform/tokens/revoke',
        platform,
        { jti: 'j', tenantId: t.tenantId },
      ],
      ['POST', `${T}/workloads`, admin, { name: 'w', roleId: t.roleId, scopes: ['all'] }],
      ['POST', `${T}/workloads/${someId}/secret`, admin, { graceSeconds: 0, grace: 0 }],
      ['POST', `${T}/roles`, admin, { name: 'r', permissions: [], inherits: 'admin' }],
      ['PATCH', `${T}/roles/${t.roleId}`, admin, { name: 'renamed', description: 'x' }],
      [
        'POST',
        `${T}/users`,
        admin,
        { email: 'u@x.test', password: 'a long enough password', roleId: t.roleId, admin: true },
      ],
      ['PATCH', `${T}/users/${user}`, admin, { disabled: false, isAdmin: true }],
      [
        'PUT',
        `${T}/policies/overrides`,
        admin,
        { rotationPeriodDays: 30, rotation_period_days: 1 },
      ],
      ['POST', `${T}/keys`, admin, { type: 'aes-256', kid: 'planted', aad: 'bound?' }],
      ['PATCH', `${T}/keys/k`, admin, { description: 'x', context: {} }],
      ['POST', `${T}/keys/orchestrate`, admin, { operation: 'rotate', kids: ['k'], dry_run: true }],
      [
        'POST',
        `${T}/cryptographic-exchanges`,
        admin,
        { kid: 'k', toTenantId: app.platformTenantId, mode: 'public', note: 'x' },
      ],
      ['POST', `${T}/cryptographic-exchanges/${someId}/accept`, admin, { kid: 'x', alias: 'y' }],
      ['POST', `${T}/cryptographic-exchanges/${someId}/reject`, admin, { why: 'x' }],
      ['POST', `${T}/cryptographic-exchanges/${someId}/cancel`, admin, { why: 'x' }],
    ];
    for (const [method, path, token, body] of cases) {
      const unknown = Object.keys(body).at(-1)!;
      const r = await api(app, method, path, token, body);
      expect([method, path, r.status, r.body.type]).toEqual([
        method,
        path,
        400,
        expect.stringMatching(/validation-failed$/),
      ]);
      expect([path, r.body.detail]).toEqual([path, expect.stringContaining(`unknown`)]);
      expect([path, r.body.field]).toEqual([path, unknown]);
    }
    expect(await count()).toEqual(before);
    expect((await api(app, 'GET', `${T}/keys/k`, admin)).body).toEqual(keyBefore);
    expect((await api(app, 'GET', `${T}/roles/${t.roleId}`, admin)).body.name).toBe('runtime');
  });
});

describe('automatic rotation with two instances on one Postgres (needs Postgres at TEST_DATABASE_URL or 127.0.0.1:5432)', () => {
  let db: TestDatabase;
  let a: TestApp;
  let b: TestApp;
  beforeAll(async () => {
    db = await createPostgresDatabase(SHARED_POSTGRES_URL);
    // Both schedulers look every 50 ms.
    a = await startTestApp({ KEY_ROTATION_CHECK_MS: '50' }, { databaseUrl: db.url });
    b = await startTestApp({ KEY_ROTATION_CHECK_MS: '50' }, { databaseUrl: db.url });
  });
  afterAll(async () => {
    await a.stop();
    await b.stop();
    await db.drop();
  });

  it('when a key becomes due while both schedulers run, then it is rotated exactly once: version 2, one new version row, one audit event', async () => {
    const t = await makeTenant(a, ['admin.keys.create', 'admin.keys.read']);
    const token = await userToken(a, t);
    expect(
      (
        await api(a, 'POST', `/api/v3/admin/tenants/${t.tenantId}/keys`, token, {
          type: 'aes-256',
          kid: 'shared',
        })
      ).status,
    ).toBe(201);
    const where = { tenant_id: t.tenantId, kid: 'shared' };
    await a.ctx
      .db('keys')
      .where(where)
      .update({ next_rotation_at: new Date(Date.now() - 60_000) });
    // Besides the timers, both instances start a pass at the same moment: the row lock decides.
    await Promise.all([a.ctx.rotation!.runOnce(), b.ctx.rotation!.runOnce()]);
    const started = Date.now();
    while (
      Date.now() - started < 5_000 &&
      (await a.ctx.db('keys').where(where).first()).current_version < 2
    )
      await sleep(50);
    // A few more passes of both schedulers: none may rotate it again.
    await sleep(300);
    const row = await a.ctx.db('keys').where(where).first();
    expect(row.current_version).toBe(2);
    expect(Date.parse(row.next_rotation_at) - Date.now()).toBeGreaterThan(364 * DAY);
    expect(
      Number((await a.ctx.db('key_versions').where({ key_id: row.id }).count({ n: '*' }))[0].n),
    ).toBe(2);
    await a.ctx.audit.flush();
    await b.ctx.audit.flush();
    const events = await a.ctx
      .db('audit_events')
      .where({ tenant_id: t.tenantId, action: 'key.rotate', target: 'shared' });
    expect(events.map((e) => e.actor)).toEqual(['system:scheduler']);
    // Instance B serves the new version at once (the rotation invalidated every cache).
    const read = await api(b, 'GET', `/api/v3/admin/tenants/${t.tenantId}/keys/shared`, token);
    expect(read.body).toMatchObject({ currentVersion: 2, rotationPeriodFrom: 'policy' });
  });
});
