/**
 * A tenant's own Vault Transit mounts (its policy's `vaultTransitMounts`): the Transit paths
 * answer below each mount it lists, on the runtime lane and on Express alike; a mount it does not
 * list answers as a path served nowhere; reserved, malformed and repeated names are refused; and
 * a change reaches this instance before the answer and another instance through the change feed.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApp } from '../../../api/app.ts';
import { startTestApp, type TestApp } from '../../../support/app.ts';
import { api } from '../../../support/auth.ts';
import {
  SHARED_POSTGRES_URL,
  createPostgresDatabase,
  type TestDatabase,
} from '../../../support/database.ts';
import { transitTenant, vault, type TransitTenant } from './support.ts';

const b64 = (s: string) => Buffer.from(s).toString('base64');

/** The Transit mounts of a policy answer's member (`policy` in force, `overrides` as stored). */
const mountsIn = (body: Record<string, unknown>, member: 'policy' | 'overrides') =>
  (body[member] as { vaultTransitMounts?: string[] }).vaultTransitMounts;

/** PUT the tenant's overrides as the platform administrator. */
const setMounts = (app: TestApp, t: TransitTenant, overrides: Record<string, unknown>) =>
  api(app, 'PUT', `/api/v3/admin/tenants/${t.tenantId}/policies/overrides`, t.admin, overrides);

/** Express alone (no runtime lane) over the same context, as an app without the lane serves. */
async function expressOnly(app: TestApp): Promise<{ app: TestApp; close(): Promise<void> }> {
  const server: Server = createServer(createApp(app.ctx)).listen(0, '127.0.0.1');
  await new Promise((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  const { port } = server.address() as AddressInfo;
  return {
    app: { ...app, url: `http://127.0.0.1:${port}` },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

describe("a tenant's Vault Transit mounts", () => {
  let app: TestApp;
  let express: { app: TestApp; close(): Promise<void> };
  let t: TransitTenant;
  let other: TransitTenant;

  beforeAll(async () => {
    app = await startTestApp();
    express = await expressOnly(app);
    t = await transitTenant(app);
    other = await transitTenant(app);
    for (const tenant of [t, other]) {
      const created = await vault(app, 'POST', 'transit/keys/k', tenant.token, {});
      expect(created.status).toBe(204);
    }
  });
  afterAll(async () => {
    await express?.close();
    await app?.stop();
  });

  it('when a tenant names no mounts, then its policy shows transit and only /v1/transit/ answers', async () => {
    const effective = await api(
      app,
      'GET',
      `/api/v3/admin/tenants/${t.tenantId}/policies/effective`,
      t.admin,
    );
    expect(mountsIn(effective.body, 'policy')).toEqual(['transit']);
    const enc = await vault(app, 'POST', 'transit/encrypt/k', t.token, { plaintext: b64('x') });
    expect(enc.status).toBe(200);
    expect(
      (await vault(app, 'POST', 'sops/encrypt/k', t.token, { plaintext: b64('x') })).status,
    ).toBe(404);
  });

  it.each([
    ['reserved auth', ['auth'], /reserves/],
    ['reserved sys', ['transit', 'sys'], /reserves/],
    ['repeated', ['sops', 'sops'], /twice/],
  ])(
    'when the mounts are %s, then a validation-failed problem names the cause and nothing changes',
    async (_case, mounts, cause) => {
      const res = await setMounts(app, other, { vaultTransitMounts: mounts });
      expect(res.status).toBe(400);
      expect(res.headers.get('content-type')).toMatch(/problem\+json/);
      expect(res.body.type).toMatch(/validation-failed/);
      expect(res.body.detail).toMatch(cause);
      const effective = await api(
        app,
        'GET',
        `/api/v3/admin/tenants/${other.tenantId}/policies/effective`,
        other.admin,
      );
      expect(mountsIn(effective.body, 'overrides')).toBeUndefined();
    },
  );

  it.each([
    ['two segments', ['team/transit']],
    ['empty', []],
    ['more than 8', ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i']],
    ['a dot', ['..']],
  ])('when the mounts are %s, then a validation-failed problem', async (_case, mounts) => {
    const res = await setMounts(app, other, { vaultTransitMounts: mounts });
    expect(res.status).toBe(400);
    expect(res.body.type).toMatch(/validation-failed/);
  });

  it('when the tenant lists sops and transit, then a key encrypts at /v1/sops/ and decrypts at /v1/transit/, on the lane and on Express', async () => {
    const set = await setMounts(app, t, { vaultTransitMounts: ['sops', 'transit'] });
    expect(set.status).toBe(200);
    expect(mountsIn(set.body, 'policy')).toEqual(['sops', 'transit']);
    for (const stack of [app, express.app]) {
      const enc = await vault(stack, 'POST', 'sops/encrypt/k', t.token, { plaintext: b64('hi') });
      expect(enc.status).toBe(200);
      // PUT, as Vault's Go client (and SOPS) writes.
      const dec = await vault(stack, 'PUT', 'transit/decrypt/k', t.token, {
        ciphertext: enc.body.data.ciphertext,
      });
      expect(dec.status).toBe(200);
      expect(Buffer.from(dec.body.data.plaintext, 'base64').toString()).toBe('hi');
      const read = await vault(stack, 'GET', 'sops/keys/k', t.token);
      expect(read.body.data).toMatchObject({ name: 'k', latest_version: 1 });
    }
  });

  it("when another tenant calls a mount it does not list, then the answer is the unknown path's, on the lane and on Express", async () => {
    for (const stack of [app, express.app]) {
      const unknown = await vault(stack, 'POST', 'nowhere/at/all', other.token, {});
      const unlisted = await vault(stack, 'POST', 'sops/encrypt/k', other.token, {
        plaintext: b64('x'),
      });
      expect(unknown).toEqual({ status: 404, body: { errors: [] } });
      expect(unlisted).toEqual(unknown);
      // Its own default mount serves it.
      expect(
        (await vault(stack, 'POST', 'transit/encrypt/k', other.token, { plaintext: b64('x') }))
          .status,
      ).toBe(200);
    }
  });

  it('when sops is removed, then /v1/sops/ answers 404 at once, without a restart, and transit still serves', async () => {
    const set = await setMounts(app, t, { vaultTransitMounts: ['transit'] });
    expect(set.status).toBe(200);
    for (const stack of [app, express.app]) {
      expect(
        await vault(stack, 'POST', 'sops/encrypt/k', t.token, { plaintext: b64('x') }),
      ).toEqual({ status: 404, body: { errors: [] } });
      expect(
        (await vault(stack, 'POST', 'transit/encrypt/k', t.token, { plaintext: b64('x') })).status,
      ).toBe(200);
    }
  });

  it('when the tenant lists only sops, then transit is no longer its mount, and the token paths still answer', async () => {
    expect((await setMounts(app, t, { vaultTransitMounts: ['sops'] })).status).toBe(200);
    expect(
      (await vault(app, 'POST', 'transit/encrypt/k', t.token, { plaintext: b64('x') })).status,
    ).toBe(404);
    expect(
      (await vault(app, 'POST', 'sops/encrypt/k', t.token, { plaintext: b64('x') })).status,
    ).toBe(200);
    expect((await vault(app, 'GET', 'auth/token/lookup-self', t.token)).status).toBe(200);
    // Overrides without the member: back to the default.
    expect((await setMounts(app, t, {})).status).toBe(200);
    expect(
      (await vault(app, 'POST', 'transit/encrypt/k', t.token, { plaintext: b64('x') })).status,
    ).toBe(200);
  });
});

describe('Vault Transit mounts across instances on one Postgres (needs Postgres at TEST_DATABASE_URL or 127.0.0.1:5432)', () => {
  let db: TestDatabase;
  let a: TestApp;
  let b: TestApp;

  beforeAll(async () => {
    db = await createPostgresDatabase(SHARED_POSTGRES_URL);
    a = await startTestApp({}, { databaseUrl: db.url });
    b = await startTestApp({}, { databaseUrl: db.url });
  });
  afterAll(async () => {
    await b?.stop();
    await a?.stop();
    await db?.drop();
  });

  it('when one instance changes the mounts, then the other serves them within the change feed poll', async () => {
    const t = await transitTenant(a);
    const loginB = await vault(b, 'POST', 'auth/approle/login', undefined, {
      role_id: t.clientId,
      secret_id: t.clientSecret,
    });
    const tokenB = loginB.body.auth.client_token as string;
    expect((await vault(b, 'POST', 'transit/keys/k', tokenB, {})).status).toBe(204);
    expect((await vault(b, 'POST', 'sops/encrypt/k', tokenB, { plaintext: b64('x') })).status).toBe(
      404,
    );
    expect((await setMounts(a, t, { vaultTransitMounts: ['sops'] })).status).toBe(200);
    // The feed's poll (a second) carries it without Redis: wait at most 15 s.
    let status = 0;
    for (let i = 0; i < 75 && status !== 200; i += 1) {
      status = (await vault(b, 'POST', 'sops/encrypt/k', tokenB, { plaintext: b64('x') })).status;
      if (status !== 200) await new Promise((r) => setTimeout(r, 200));
    }
    expect(status).toBe(200);
  });
});
