/**
 * Tokens must not outlive what they stood for (hardening item 14): the refresh-token family they
 * were issued with, and the permissions of the role they were issued under.
 */
import { startTestApp, type TestApp } from '../../../support/app.ts';
import { TEST_ENGINE } from '../../../support/database.ts';
import { adminToken, api, makeTenant, postForm, workloadToken } from '../../../support/auth.ts';
import { sleep } from '../../support/time.ts';

const TOKEN = '/api/v3/auth/token';

describe(`tokens outliving what they stood for (${TEST_ENGINE})`, () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(async () => {
    await app.stop();
  });

  it('when a used refresh token is presented again (reuse), then the access tokens issued from its family are refused too, not only the family', async () => {
    const t = await makeTenant(app, ['admin.keys.read']);
    const login = await postForm(app, TOKEN, {
      grant_type: 'password',
      username: t.userEmail,
      password: t.userPassword,
      tenant_id: t.tenantId,
    });
    const first = login.body.access_token as string;
    const renewed = await postForm(app, TOKEN, {
      grant_type: 'refresh_token',
      refresh_token: login.body.refresh_token as string,
    });
    expect(renewed.status).toBe(200);
    const second = renewed.body.access_token as string;
    const keys = `/api/v3/admin/tenants/${t.tenantId}/keys`;
    expect((await api(app, 'GET', keys, second)).status).toBe(200);
    // The stolen copy of the first refresh token is replayed: the family is compromised.
    const replay = await postForm(app, TOKEN, {
      grant_type: 'refresh_token',
      refresh_token: login.body.refresh_token as string,
    });
    expect(replay.body.error).toBe('invalid_grant');
    expect((await api(app, 'GET', keys, first)).status).toBe(401);
    expect((await api(app, 'GET', keys, second)).status).toBe(401);
    // A fresh sign-in starts a new family and works.
    const again = await postForm(app, TOKEN, {
      grant_type: 'password',
      username: t.userEmail,
      password: t.userPassword,
      tenant_id: t.tenantId,
    });
    expect((await api(app, 'GET', keys, again.body.access_token as string)).status).toBe(200);
  });

  it('when a refresh token is revoked (RFC 7009), then the access tokens of its family are refused as well', async () => {
    const t = await makeTenant(app, ['admin.keys.read']);
    const login = await postForm(app, TOKEN, {
      grant_type: 'password',
      username: t.userEmail,
      password: t.userPassword,
      tenant_id: t.tenantId,
    });
    const keys = `/api/v3/admin/tenants/${t.tenantId}/keys`;
    expect((await api(app, 'GET', keys, login.body.access_token as string)).status).toBe(200);
    expect(
      (
        await postForm(app, '/api/v3/auth/token/revoke', {
          token: login.body.refresh_token as string,
        })
      ).status,
    ).toBe(200);
    expect((await api(app, 'GET', keys, login.body.access_token as string)).status).toBe(401);
  });

  it('when a role is narrowed, then outstanding tokens holding the removed permission are refused at once, and new tokens carry the narrower role', async () => {
    const t = await makeTenant(app, ['crypto.encrypt', 'crypto.decrypt', 'admin.keys.read']);
    const admin = await adminToken(app);
    expect(
      (
        await api(app, 'POST', `/api/v3/admin/tenants/${t.tenantId}/keys`, admin, {
          kid: 'k',
          type: 'aes-256',
        })
      ).status,
    ).toBe(201);
    const workload = await workloadToken(app, t);
    const user = (
      await postForm(app, TOKEN, {
        grant_type: 'password',
        username: t.userEmail,
        password: t.userPassword,
        tenant_id: t.tenantId,
      })
    ).body.access_token as string;
    const encrypt = (token: string) =>
      api(app, 'POST', '/api/v3/crypto/encrypt', token, { kid: 'k', data: 'AA' });
    expect((await encrypt(workload)).status).toBe(200);
    const narrowed = await api(
      app,
      'PATCH',
      `/api/v3/admin/tenants/${t.tenantId}/roles/${t.roleId}`,
      admin,
      { permissions: ['crypto.decrypt', 'admin.keys.read'] },
    );
    expect(narrowed.status).toBe(200);
    expect((await encrypt(workload)).status).toBe(401);
    expect((await api(app, 'GET', `/api/v3/admin/tenants/${t.tenantId}/keys`, user)).status).toBe(
      401,
    );
    await sleep(1100); // subject entries have one-second precision (iat)
    const fresh = await workloadToken(app, t);
    expect((await encrypt(fresh)).status).toBe(403);
  });

  it('when a role is widened, then outstanding tokens keep working', async () => {
    const t = await makeTenant(app, ['crypto.encrypt']);
    const admin = await adminToken(app);
    await api(app, 'POST', `/api/v3/admin/tenants/${t.tenantId}/keys`, admin, {
      kid: 'k',
      type: 'aes-256',
    });
    const workload = await workloadToken(app, t);
    expect(
      (
        await api(app, 'PATCH', `/api/v3/admin/tenants/${t.tenantId}/roles/${t.roleId}`, admin, {
          permissions: ['crypto.encrypt', 'crypto.decrypt'],
        })
      ).status,
    ).toBe(200);
    expect(
      (await api(app, 'POST', '/api/v3/crypto/encrypt', workload, { kid: 'k', data: 'AA' })).status,
    ).toBe(200);
  });
});
