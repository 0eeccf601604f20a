import { startTestApp, type TestApp } from '../../../support/app.ts';
import {
  createPostgresDatabase,
  SHARED_POSTGRES_URL,
  TEST_REDIS_URL,
  TEST_ENGINE,
  type TestDatabase,
} from '../../../support/database.ts';
import {
  adminToken,
  api,
  makeTenant,
  postForm,
  workloadToken,
  type TestTenant,
} from '../../../support/auth.ts';
import { sleep } from '../../support/time.ts';

describe(`revocation and introspection (${TEST_ENGINE})`, () => {
  let app: TestApp;
  let t: TestTenant;
  beforeAll(async () => {
    app = await startTestApp();
    t = await makeTenant(app, ['crypto.encrypt', 'admin.keys.read']);
  });
  afterAll(async () => {
    await app.stop();
  });

  it('when a token is revoked, then 200 and the token answers 401 at once; unknown tokens also answer 200', async () => {
    const admin = await adminToken(app);
    expect((await api(app, 'GET', '/api/v3/admin/platform/scopes', admin)).status).toBe(200);
    const r = await postForm(app, '/api/v3/auth/token/revoke', {
      token: admin,
      token_type_hint: 'access_token',
    });
    expect(r.status).toBe(200);
    expect((await api(app, 'GET', '/api/v3/admin/platform/scopes', admin)).status).toBe(401);
    expect(
      (await postForm(app, '/api/v3/auth/token/revoke', { token: 'no-such-token' })).status,
    ).toBe(200);
    expect((await postForm(app, '/api/v3/auth/token/revoke', {})).status).toBe(200);
  });

  it('when a refresh token is revoked, then its family can no longer refresh', async () => {
    const login = await postForm(app, '/api/v3/auth/token', {
      grant_type: 'password',
      username: t.userEmail,
      password: t.userPassword,
      tenant_id: t.tenantId,
    });
    expect(
      (
        await postForm(app, '/api/v3/auth/token/revoke', {
          token: login.body.refresh_token as string,
        })
      ).status,
    ).toBe(200);
    const r = await postForm(app, '/api/v3/auth/token', {
      grant_type: 'refresh_token',
      refresh_token: login.body.refresh_token as string,
    });
    expect(r.body.error).toBe('invalid_grant');
  });

  it('when a caller introspects its own token, then active with sub, exp and scope', async () => {
    const own = await workloadToken(app, t);
    const r = await postForm(
      app,
      '/api/v3/auth/token/introspect',
      { token: own },
      { authorization: `Bearer ${own}` },
    );
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      active: true,
      sub: expect.any(String),
      exp: expect.any(Number),
      scope: expect.stringContaining('crypto.encrypt'),
      tenantId: t.tenantId,
    });
  });

  it("when a caller without platform permission introspects another's token, then active false", async () => {
    const own = await workloadToken(app, t);
    const admin = await adminToken(app);
    const r = await postForm(
      app,
      '/api/v3/auth/token/introspect',
      { token: admin },
      { authorization: `Bearer ${own}` },
    );
    expect(r.body).toEqual({ active: false });
  });

  it("when the platform admin introspects another's token, then it sees it; a revoked or garbage token is inactive", async () => {
    const admin = await adminToken(app);
    const other = await workloadToken(app, t);
    const seen = await postForm(
      app,
      '/api/v3/auth/token/introspect',
      { token: other },
      { authorization: `Bearer ${admin}` },
    );
    expect(seen.body).toMatchObject({ active: true, client_id: t.clientId });
    await postForm(app, '/api/v3/auth/token/revoke', { token: other });
    expect(
      (
        await postForm(
          app,
          '/api/v3/auth/token/introspect',
          { token: other },
          { authorization: `Bearer ${admin}` },
        )
      ).body,
    ).toEqual({ active: false });
    expect(
      (
        await postForm(
          app,
          '/api/v3/auth/token/introspect',
          { token: 'garbage' },
          { authorization: `Bearer ${admin}` },
        )
      ).body,
    ).toEqual({ active: false });
  });

  it('when introspection is called without a bearer token, then 401 invalid_client', async () => {
    const r = await postForm(app, '/api/v3/auth/token/introspect', { token: 'x' });
    expect(r.status).toBe(401);
    expect(r.body.error).toBe('invalid_client');
  });

  it('when a platform admin force-revokes a token by jti, then it is refused and listed in the revoked view', async () => {
    const admin = await adminToken(app);
    const victim = await adminToken(app);
    const jti = JSON.parse(Buffer.from(victim.split('.')[1], 'base64url').toString()).jti;
    const r = await api(app, 'POST', '/api/v3/admin/platform/tokens/revoke', admin, {
      jti,
      reason: 'incident 42',
    });
    expect(r.status).toBe(200);
    expect((await api(app, 'GET', '/api/v3/admin/platform/scopes', victim)).status).toBe(401);
    const list = await api(app, 'GET', '/api/v3/admin/platform/tokens/revoked?limit=500', admin);
    expect(
      (list.body.items as Array<{ jti: string; reason: string }>).find((i) => i.jti === jti)
        ?.reason,
    ).toBe('incident 42');
  });

  it("when a platform admin force-revokes a token by itself, then the revocation is audited in the admin's tenant naming the token's; an invalid token revokes and records nothing", async () => {
    const admin = await adminToken(app);
    const victim = await workloadToken(app, t);
    const jti = JSON.parse(Buffer.from(victim.split('.')[1], 'base64url').toString()).jti;
    const r = await api(app, 'POST', '/api/v3/admin/platform/tokens/revoke', admin, {
      token: victim,
    });
    expect(r.body).toEqual({ revoked: true, jti });
    const none = await api(app, 'POST', '/api/v3/admin/platform/tokens/revoke', admin, {
      token: 'not-a-token',
    });
    expect([none.status, none.body]).toEqual([200, { revoked: false, jti: null }]);
    await app.ctx.audit.flush();
    const events = await app.ctx
      .db('audit_events')
      .where({ action: 'platform.token.force-revoke' })
      .whereIn('target', [jti, 'not-a-token'])
      .select('tenant_id', 'target', 'details');
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ tenant_id: app.platformTenantId, target: jti });
    const details = events[0].details as string | Record<string, unknown>;
    expect(typeof details === 'string' ? JSON.parse(details) : details).toEqual({
      tokenTenant: t.tenantId,
    });
  });
});

describe('revocation across API instances sharing Postgres and Redis (needs Postgres at TEST_DATABASE_URL or 127.0.0.1:5432 and Redis at 127.0.0.1:6379)', () => {
  let db: TestDatabase;
  let a: TestApp;
  let b: TestApp;
  beforeAll(async () => {
    db = await createPostgresDatabase(SHARED_POSTGRES_URL);
    a = await startTestApp({ REDIS_URL: TEST_REDIS_URL }, { databaseUrl: db.url });
    b = await startTestApp({ REDIS_URL: TEST_REDIS_URL }, { databaseUrl: db.url });
  });
  afterAll(async () => {
    await a.stop();
    await b.stop();
    await db.drop();
  });

  it('when a token is revoked on instance A, then instance B refuses it within 1 s', async () => {
    const admin = await adminToken(a);
    expect((await api(b, 'GET', '/api/v3/admin/platform/scopes', admin)).status).toBe(200);
    await postForm(a, '/api/v3/auth/token/revoke', { token: admin });
    const started = Date.now();
    let status = 200;
    while (Date.now() - started < 1000) {
      status = (await api(b, 'GET', '/api/v3/admin/platform/scopes', admin)).status;
      if (status === 401) break;
      await sleep(25);
    }
    expect(status).toBe(401);
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('when instance A rotates the signing key, then instance B accepts tokens signed with the new key', async () => {
    const admin = await adminToken(a);
    await api(a, 'POST', '/api/v3/admin/platform/signing-keys/rotate', admin);
    const fresh = await adminToken(a);
    await sleep(1100);
    expect((await api(b, 'GET', '/api/v3/admin/platform/scopes', fresh)).status).toBe(200);
  });
});
