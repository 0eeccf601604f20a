/**
 * Disabling or deleting a user or workload, or resetting a password, ends the access tokens it
 * already holds at once (not when they expire: up to 10 h for workloads), everywhere they are
 * cached; tokens issued afterwards work as before.
 */
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
import { sleep } from '../../support/time.ts';

const PERMISSIONS = ['crypto.keys.read', 'admin.humanuser', 'admin.tenant.read'];
const nextSecond = () => sleep(1100);

describe(`subject revocation (${TEST_ENGINE})`, () => {
  let app: TestApp;
  let admin: string;
  beforeAll(async () => {
    app = await startTestApp();
    admin = await adminToken(app);
  });
  afterAll(async () => {
    await app.stop();
  });

  const keysWith = (token: string) => api(app, 'GET', '/api/v3/crypto/keys', token);
  const usersWith = (t: TestTenant, token: string) =>
    api(app, 'GET', `/api/v3/admin/tenants/${t.tenantId}/users`, token);
  const workloadId = async (t: TestTenant) =>
    (await app.ctx.db('workloads').where({ client_id: t.clientId }).first('id')).id as string;

  it('when a workload is disabled, then its token is refused at once; once enabled again, only tokens issued after that work', async () => {
    const t = await makeTenant(app, PERMISSIONS);
    const before = await workloadToken(app, t);
    expect((await keysWith(before)).status).toBe(200);
    const id = await workloadId(t);
    expect(
      (await api(app, 'POST', `/api/v3/admin/tenants/${t.tenantId}/workloads/${id}/disable`, admin))
        .status,
    ).toBe(200);
    const refused = await keysWith(before);
    expect(refused.status).toBe(401);
    expect(
      (await api(app, 'POST', `/api/v3/admin/tenants/${t.tenantId}/workloads/${id}/enable`, admin))
        .status,
    ).toBe(200);
    await nextSecond();
    expect((await keysWith(before)).status).toBe(401);
    expect((await keysWith(await workloadToken(app, t))).status).toBe(200);
  });

  it('when a workload is deleted, then its token is refused at once', async () => {
    const t = await makeTenant(app, PERMISSIONS);
    const token = await workloadToken(app, t);
    expect((await keysWith(token)).status).toBe(200);
    expect(
      (
        await api(
          app,
          'DELETE',
          `/api/v3/admin/tenants/${t.tenantId}/workloads/${await workloadId(t)}`,
          admin,
        )
      ).status,
    ).toBe(204);
    expect((await keysWith(token)).status).toBe(401);
  });

  it('when a user is disabled, then the access token they hold is refused at once, not when it expires', async () => {
    const t = await makeTenant(app, PERMISSIONS);
    const token = await userToken(app, t);
    expect((await usersWith(t, token)).status).toBe(200);
    const user = await app.ctx
      .db('users')
      .where({ tenant_id: t.tenantId, email: t.userEmail })
      .first('id');
    expect(
      (
        await api(app, 'PATCH', `/api/v3/admin/tenants/${t.tenantId}/users/${user.id}`, admin, {
          disabled: true,
        })
      ).status,
    ).toBe(200);
    expect((await usersWith(t, token)).status).toBe(401);
  });

  it('when a user resets their password, then tokens of the old password are refused and a sign-in right after works', async () => {
    const t = await makeTenant(app, PERMISSIONS);
    const old = await userToken(app, t);
    expect((await usersWith(t, old)).status).toBe(200);
    await nextSecond(); // the old token from an earlier second than the reset (iat has 1 s precision)
    expect(
      (
        await postForm(app, '/api/v3/auth/password/forgot', {
          email: t.userEmail,
          tenant_id: t.tenantId,
        })
      ).status,
    ).toBe(202);
    await app.ctx.background.idle(); // the mail goes out after the answer
    const mail = await app.ctx
      .db('outbox')
      .where({ recipient: t.userEmail })
      .orderBy('id', 'desc')
      .first();
    const resetToken = /token=([\w-]+)/.exec(mail.body)![1];
    expect(
      (
        await postForm(app, '/api/v3/auth/password/reset', {
          token: resetToken,
          password: 'a brand new passphrase',
        })
      ).status,
    ).toBe(200);
    expect((await usersWith(t, old)).status).toBe(401);
    const fresh = await postForm(app, '/api/v3/auth/token', {
      grant_type: 'password',
      username: t.userEmail,
      password: 'a brand new passphrase',
      tenant_id: t.tenantId,
    });
    expect(fresh.status).toBe(200);
    expect((await usersWith(t, fresh.body.access_token as string)).status).toBe(200);
  });

  it('when another subject of the tenant is revoked, then this one is untouched', async () => {
    const t = await makeTenant(app, PERMISSIONS);
    const mine = await workloadToken(app, t);
    const other = await makeTenant(app, PERMISSIONS);
    expect(
      (
        await api(
          app,
          'POST',
          `/api/v3/admin/tenants/${other.tenantId}/workloads/${await workloadId(other)}/disable`,
          admin,
        )
      ).status,
    ).toBe(200);
    expect((await keysWith(mine)).status).toBe(200);
  });
});

describe(`exchanged tokens (${TEST_ENGINE})`, () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(async () => {
    await app.stop();
  });

  it('when the token a delegated token was exchanged from is revoked, then the delegated token is refused too', async () => {
    const t = await makeTenant(app, ['crypto.keys.read', 'auth.token-exchange']);
    const subject = await workloadToken(app, t);
    const exchanged = await postForm(app, '/api/v3/auth/token', {
      grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
      subject_token: subject,
      resource: `urn:keyward:tenant:${t.tenantId}:core`,
    });
    expect(exchanged.status).toBe(200);
    const delegated = exchanged.body.access_token as string;
    expect((await api(app, 'GET', '/api/v3/crypto/keys', delegated)).status).toBe(200);
    expect((await postForm(app, '/api/v3/auth/token/revoke', { token: subject })).status).toBe(200);
    expect((await api(app, 'GET', '/api/v3/crypto/keys', subject)).status).toBe(401);
    expect((await api(app, 'GET', '/api/v3/crypto/keys', delegated)).status).toBe(401);
  });
});
