import { startTestApp, type TestApp } from '../../../support/app.ts';
import { TEST_ENGINE } from '../../../support/database.ts';
import {
  adminToken,
  api,
  makeTenant,
  postForm,
  userToken,
  workloadToken,
  type TestTenant,
} from '../../../support/auth.ts';
import { isLockedOut } from '../../../api/services/auth/rate-limits.ts';
import { lockoutKey } from '../../../api/services/auth/passwords.ts';

const TOKEN = '/api/v3/auth/token';
const EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';

describe(`regressions from the security review (${TEST_ENGINE})`, () => {
  let app: TestApp;
  let t: TestTenant;
  beforeAll(async () => {
    app = await startTestApp({ RATE_LIMIT_FAILURES_PER_MINUTE: '5', LOCKOUT_THRESHOLD: '5' });
    t = await makeTenant(app, [
      'auth.token-exchange',
      'admin.keys.read',
      'admin.keys.create',
      'crypto.keys.read',
      'crypto.encrypt',
      'audit.events.read',
    ]);
  });
  afterAll(async () => {
    await app.stop();
  });

  it('when an APPLICATION token is exchanged for an admin resource, then invalid_target (audiences never change)', async () => {
    const core = await workloadToken(app, t);
    const r = await postForm(app, TOKEN, {
      grant_type: EXCHANGE,
      subject_token: core,
      resource: `urn:keyward:tenant:${t.tenantId}:admin`,
    });
    expect(r.status).toBe(400);
    expect(r.body.error).toBe('invalid_target');
  });

  it('when a legacy token is offered to token exchange, then invalid_grant', async () => {
    const res = await fetch(`${app.url}/api/authenticate/app`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ clientId: t.clientId, clientSecret: t.clientSecret }),
    });
    const legacy = ((await res.json()) as any).accessToken;
    const r = await postForm(app, TOKEN, {
      grant_type: EXCHANGE,
      subject_token: legacy,
      resource: `urn:keyward:tenant:${t.tenantId}:core`,
    });
    expect(r.body.error).toBe('invalid_grant');
  });

  it('when password guesses carry a fresh client_id each, then the failure budget still runs out (429)', async () => {
    const u = await makeTenant(app, ['admin.keys.read']);
    const statuses: number[] = [];
    for (let i = 0; i < 8; i += 1) {
      statuses.push(
        (
          await postForm(app, TOKEN, {
            grant_type: 'password',
            username: u.userEmail,
            password: 'wrong guess!',
            tenant_id: u.tenantId,
            client_id: crypto.randomUUID(),
          })
        ).status,
      );
    }
    expect(statuses).toContain(429);
  });

  it('when wrong passwords arrive concurrently, then every one counts and the account locks for that address', async () => {
    const u = await makeTenant(app, ['admin.keys.read']);
    await Promise.all(
      Array.from({ length: 12 }, () =>
        postForm(app, TOKEN, {
          grant_type: 'password',
          username: u.userEmail,
          password: 'wrong guess!',
          tenant_id: u.tenantId,
        }),
      ),
    );
    const user = await app.ctx.db('users').where({ tenant_id: u.tenantId }).first();
    expect(await isLockedOut(app.ctx.auth.limits, lockoutKey(user.id, '127.0.0.1'))).toBe(true);
  });

  it('when a client_id carries a NUL byte, then the other audit events of the batch are still written', async () => {
    await postForm(app, TOKEN, {
      grant_type: 'client_credentials',
      client_id: t.clientId,
      client_secret: crypto.randomUUID(),
    });
    await postForm(app, TOKEN, {
      grant_type: 'client_credentials',
      client_id: 'x\u0000y',
      client_secret: 'z',
    });
    await app.ctx.audit.flush();
    const rows = await app.ctx.db('audit_events').where({
      tenant_id: t.tenantId,
      action: 'auth.token.client_credentials',
      outcome: 'failure',
    });
    expect(rows.length).toBeGreaterThan(0);
  });

  it('when a tenant is suspended, then its already issued tokens stop working within a second', async () => {
    const s = await makeTenant(app, ['crypto.keys.read']);
    const core = await workloadToken(app, s);
    expect((await api(app, 'GET', '/api/v3/crypto/keys', core)).status).toBe(200);
    expect(
      (
        await api(
          app,
          'POST',
          `/api/v3/admin/platform/tenants/${s.tenantId}/suspend`,
          await adminToken(app),
        )
      ).status,
    ).toBe(200);
    expect((await api(app, 'GET', '/api/v3/crypto/keys', core)).status).toBe(401);
  });

  it('when the scheme is written "bearer" in lower case, then the token is accepted (RFC 7235 2.1)', async () => {
    const core = await workloadToken(app, t);
    const res = await fetch(`${app.url}/api/v3/crypto/keys`, {
      headers: { authorization: `bearer ${core}` },
    });
    expect(res.status).toBe(200);
  });

  it('when cursors, limits, sequence numbers or kids are hostile, then 400 problems, never 500', async () => {
    const admin = await userToken(app, t);
    const platform = await adminToken(app);
    const core = await workloadToken(app, t);
    const cursor = Buffer.from('zzz').toString('base64url');
    expect(
      (await api(app, 'GET', `/api/v3/admin/platform/tenants?cursor=${cursor}`, platform)).status,
    ).toBe(400);
    expect(
      (await api(app, 'GET', '/api/v3/admin/platform/tokens/revoked?limit=-5', platform)).status,
    ).toBe(200);
    // Not an integer: refused naming the field, as every other list (it was read as 100).
    expect(
      (await api(app, 'GET', '/api/v3/admin/platform/tokens/revoked?limit=ten', platform)).body,
    ).toMatchObject({ status: 400, field: 'limit' });
    expect(
      (
        await api(
          app,
          'GET',
          `/api/v3/audit/events?cursor=${Buffer.from('1e400').toString('base64url')}`,
          core,
        )
      ).status,
    ).toBe(400);
    expect(
      (await api(app, 'POST', '/api/v3/crypto/encrypt', core, { kid: 'a\u0000b', data: 'AA==' }))
        .status,
    ).toBe(400);
    // NUL is refused where the request enters (hardening: canonical identifiers), before any lookup.
    expect(
      (await api(app, 'GET', `/api/v3/admin/tenants/${t.tenantId}/keys/a%00b`, admin)).status,
    ).toBe(400);
    expect((await api(app, 'GET', '/api/v3/audit/events?actor=%00', core)).status).toBe(400);
  });
});
