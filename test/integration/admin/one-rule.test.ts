/**
 * Where the route handlers and the services held two copies of one admin rule, the copies had
 * drifted. Each case names what the route copy answered before the rule moved into one service.
 */
import { startTestApp, type TestApp } from '../../../support/app.ts';
import { TEST_ENGINE } from '../../../support/database.ts';
import { api, makeTenant, userToken, type TestTenant } from '../../../support/auth.ts';

const PERMISSIONS = [
  'admin.humanuser',
  'admin.roles.read',
  'admin.roles.create',
  'admin.roles.update',
  'admin.workloads.read',
  'admin.workloads.create',
  'admin.workloads.disable',
  'admin.workloads.delete',
];

describe(`admin rules live once, in the services (${TEST_ENGINE})`, () => {
  let app: TestApp;
  let t: TestTenant;
  let token: string;
  let base: string;
  beforeAll(async () => {
    app = await startTestApp();
    t = await makeTenant(app, PERMISSIONS, 'one-rule');
    token = await userToken(app, t);
    base = `/api/v3/admin/tenants/${t.tenantId}`;
  });
  afterAll(async () => {
    await app.stop();
  });

  const makeRole = async (name: string) => {
    const r = await api(app, 'POST', `${base}/roles`, token, {
      name,
      permissions: ['admin.keys.read'],
    });
    expect(r.status).toBe(201);
    return r.body.id as string;
  };

  it('when a role is renamed to the name of another role, then 409 as on creation (the unique index answered 500)', async () => {
    await makeRole('readers');
    const id = await makeRole('writers');
    const r = await api(app, 'PATCH', `${base}/roles/${id}`, token, { name: 'readers' });
    expect([r.status, r.body.status]).toEqual([409, 409]);
    expect((await api(app, 'GET', `${base}/roles/${id}`, token)).body.name).toBe('writers');
  });

  it('when a role is renamed to 201 characters, then 400 as on creation (the change accepted any length)', async () => {
    const id = await makeRole('long-to-be');
    const r = await api(app, 'PATCH', `${base}/roles/${id}`, token, { name: 'x'.repeat(201) });
    expect(r.status).toBe(400);
    expect(r.body.detail).toBe('a role needs a name of 1 to 200 characters');
  });

  it('when a role change names an unknown permission, then 400 listing it, as on creation (it said only "catalogue strings")', async () => {
    const id = await makeRole('narrow');
    const r = await api(app, 'PATCH', `${base}/roles/${id}`, token, {
      permissions: ['admin.keys.read', 'admin.keys.teleport'],
    });
    expect(r.status).toBe(400);
    expect(r.body.unknownPermissions).toEqual(['admin.keys.teleport']);
  });

  it('when a role change holds no member, then 200 with the role unchanged (an empty update answered 500)', async () => {
    const id = await makeRole('unchanged');
    const r = await api(app, 'PATCH', `${base}/roles/${id}`, token, {});
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ id, name: 'unchanged', permissions: ['admin.keys.read'] });
  });

  it('when a workload is disabled, then its revocation names the administrator, as on deletion (it named no one)', async () => {
    const made = await api(app, 'POST', `${base}/workloads`, token, {
      name: 'to-disable',
      roleId: t.roleId,
    });
    expect(made.status).toBe(201);
    expect(
      (await api(app, 'POST', `${base}/workloads/${made.body.id}/disable`, token)).status,
    ).toBe(200);
    const row = await app.ctx
      .db('revoked_tokens')
      .where({ sub: made.body.id })
      .first('revoked_by', 'reason');
    expect(row).toEqual({
      revoked_by: expect.stringMatching(/^user:/),
      reason: 'workload disabled',
    });
  });

  it('when a user is created, then the answer is the same record a read answers (creation left out lockedUntil and updatedAt)', async () => {
    const made = await api(app, 'POST', `${base}/users`, token, {
      email: 'same@one-rule.test',
      password: 'a sufficiently long secret',
      roleId: t.roleId,
    });
    expect(made.status).toBe(201);
    expect(made.body).toEqual((await api(app, 'GET', `${base}/users/${made.body.id}`, token)).body);
    expect(made.body).toMatchObject({ lockedUntil: null, updatedAt: made.body.createdAt });
  });
});
