import { startTestApp, type TestApp } from '../../../support/app.ts';
import { TEST_ENGINE } from '../../../support/database.ts';
import {
  adminToken,
  api,
  makeTenant,
  postForm,
  userToken,
  type TestTenant,
} from '../../../support/auth.ts';

const TENANT_ADMIN = [
  'admin.tenant.read',
  'admin.workloads.read',
  'admin.workloads.create',
  'admin.workloads.disable',
  'admin.workloads.rotate-secret',
  'admin.workloads.delete',
  'admin.roles.read',
  'admin.roles.create',
  'admin.roles.update',
  'admin.roles.delete',
  'admin.humanuser',
  'admin.policy.templates.read',
  'admin.policy.effective.read',
  'admin.policy.overrides.write',
  'admin.keys.create',
  'admin.keys.read',
  'crypto.encrypt',
];

describe(`admin identities: tenants, workloads, roles, users, policies (${TEST_ENGINE})`, () => {
  let app: TestApp;
  let admin: string;
  let t: TestTenant;
  let token: string;
  let base: string;
  const login = (clientId: string, clientSecret: string) =>
    postForm(app, '/api/v3/auth/token', {
      grant_type: 'client_credentials',
      client_id: clientId,
      client_secret: clientSecret,
    });
  beforeAll(async () => {
    app = await startTestApp();
    admin = await adminToken(app);
    t = await makeTenant(app, TENANT_ADMIN, 'ident');
    token = await userToken(app, t);
    base = `/api/v3/admin/tenants/${t.tenantId}`;
  });
  afterAll(async () => {
    await app.stop();
  });

  describe('platform tenants', () => {
    it('when the platform admin creates, lists and reads tenants, then 201, a cursor-paginated list and the record; bad names and ids are refused', async () => {
      const made = await api(app, 'POST', '/api/v3/admin/platform/tenants', admin, {
        name: 'acme',
      });
      expect(made.status).toBe(201);
      expect(made.body).toMatchObject({
        id: expect.any(String),
        name: 'acme',
        status: 'active',
        isPlatform: false,
      });
      expect(
        (await api(app, 'POST', '/api/v3/admin/platform/tenants', admin, { name: '' })).status,
      ).toBe(400);
      const page = await api(app, 'GET', '/api/v3/admin/platform/tenants?limit=1', admin);
      expect(page.body.items).toHaveLength(1);
      const rest = await api(
        app,
        'GET',
        `/api/v3/admin/platform/tenants?limit=500&cursor=${page.body.nextCursor}`,
        admin,
      );
      const ids = [
        ...(page.body.items as Array<{ id: string }>),
        ...(rest.body.items as Array<{ id: string }>),
      ].map((x) => x.id);
      expect(ids).toEqual(expect.arrayContaining([made.body.id, t.tenantId, app.platformTenantId]));
      expect(
        (await api(app, 'GET', `/api/v3/admin/platform/tenants/${made.body.id}`, admin)).body,
      ).toEqual(made.body);
      expect(
        (await api(app, 'GET', `/api/v3/admin/platform/tenants/${crypto.randomUUID()}`, admin))
          .status,
      ).toBe(404);
      // Regression: a malformed id reached Postgres as a uuid type error and answered 500.
      expect(
        (await api(app, 'GET', '/api/v3/admin/platform/tenants/not-a-uuid', admin)).status,
      ).toBe(404);
      expect(
        (await api(app, 'GET', '/api/v3/admin/tenants/not-a-uuid/workloads', admin)).status,
      ).toBe(404);
    });

    it('when a tenant is suspended, then its workload logins fail with 401 invalid_client until it is resumed', async () => {
      const s = await makeTenant(app, ['crypto.encrypt'], 'suspendable');
      expect((await login(s.clientId, s.clientSecret)).status).toBe(200);
      const suspended = await api(
        app,
        'POST',
        `/api/v3/admin/platform/tenants/${s.tenantId}/suspend`,
        admin,
      );
      expect(suspended.body).toMatchObject({ id: s.tenantId, status: 'suspended' });
      const refused = await login(s.clientId, s.clientSecret);
      expect([refused.status, refused.body.error]).toEqual([401, 'invalid_client']);
      expect(
        (await api(app, 'POST', `/api/v3/admin/platform/tenants/${s.tenantId}/resume`, admin)).body
          .status,
      ).toBe('active');
      expect((await login(s.clientId, s.clientSecret)).status).toBe(200);
      expect(
        (
          await api(
            app,
            'POST',
            `/api/v3/admin/platform/tenants/${app.platformTenantId}/suspend`,
            admin,
          )
        ).status,
      ).toBe(404);
    });

    it("when a tenant is created, suspended and resumed, then the platform's chain records the creation and the tenant's own chain its creation, suspension and resumption", async () => {
      const made = await api(app, 'POST', '/api/v3/admin/platform/tenants', admin, {
        name: 'audited',
      });
      const id = made.body.id as string;
      for (const action of ['suspend', 'resume'])
        expect(
          (await api(app, 'POST', `/api/v3/admin/platform/tenants/${id}/${action}`, admin)).status,
        ).toBe(200);
      await app.ctx.audit.flush();
      const events = await app.ctx
        .db('audit_events')
        .where({ target: id })
        .orderBy('id')
        .select('tenant_id', 'action', 'actor', 'outcome');
      const actor = expect.stringMatching(/^user:/);
      expect(events).toEqual([
        {
          tenant_id: app.platformTenantId,
          action: 'platform.tenant.create',
          actor,
          outcome: 'success',
        },
        { tenant_id: id, action: 'tenant.created', actor, outcome: 'success' },
        { tenant_id: id, action: 'tenant.suspend', actor, outcome: 'success' },
        { tenant_id: id, action: 'tenant.resume', actor, outcome: 'success' },
      ]);
    });

    it('when a tenant user calls the platform routes, then 403; it reads its own tenant record', async () => {
      expect((await api(app, 'GET', '/api/v3/admin/platform/tenants', token)).status).toBe(403);
      expect(
        (await api(app, 'POST', '/api/v3/admin/platform/tenants', token, { name: 'x' })).status,
      ).toBe(403);
      expect((await api(app, 'GET', base, token)).body).toMatchObject({
        id: t.tenantId,
        name: 'ident',
      });
    });
  });

  describe('workloads', () => {
    it('when a workload is registered, then the secret is shown once, never again, and it logs in; the same name twice is 409', async () => {
      const r = await api(app, 'POST', `${base}/workloads`, token, {
        name: 'billing',
        roleId: t.roleId,
      });
      expect(r.status).toBe(201);
      expect(r.body).toMatchObject({
        clientId: expect.any(String),
        clientSecret: expect.any(String),
        roleId: t.roleId,
        disabled: false,
      });
      const secret = r.body.clientSecret as string;
      expect(
        (await api(app, 'POST', `${base}/workloads`, token, { name: 'billing', roleId: t.roleId }))
          .status,
      ).toBe(409);
      expect(
        (
          await api(app, 'POST', `${base}/workloads`, token, {
            name: 'other',
            roleId: crypto.randomUUID(),
          })
        ).status,
      ).toBe(400);
      const one = await api(app, 'GET', `${base}/workloads/${r.body.id}`, token);
      const list = await api(app, 'GET', `${base}/workloads`, token);
      for (const shown of [JSON.stringify(one.body), JSON.stringify(list.body)]) {
        expect(shown).not.toContain(secret);
        expect(shown).not.toMatch(/secret/i);
      }
      expect((await login(r.body.clientId as string, secret)).status).toBe(200);
    });

    it('when a workload is disabled, then 401 invalid_client; enabled again, it logs in; deleted, it is gone', async () => {
      const w = (
        await api(app, 'POST', `${base}/workloads`, token, { name: 'toggle', roleId: t.roleId })
      ).body as { id: string; clientId: string; clientSecret: string };
      expect(
        (await api(app, 'POST', `${base}/workloads/${w.id}/disable`, token)).body.disabled,
      ).toBe(true);
      const refused = await login(w.clientId, w.clientSecret);
      expect([refused.status, refused.body.error]).toEqual([401, 'invalid_client']);
      expect(
        (await api(app, 'POST', `${base}/workloads/${w.id}/enable`, token)).body.disabled,
      ).toBe(false);
      expect((await login(w.clientId, w.clientSecret)).status).toBe(200);
      expect((await api(app, 'DELETE', `${base}/workloads/${w.id}`, token)).status).toBe(204);
      expect((await api(app, 'GET', `${base}/workloads/${w.id}`, token)).status).toBe(404);
      expect((await login(w.clientId, w.clientSecret)).status).toBe(401);
    });

    it('when a secret is rotated with a grace period, then both secrets work; rotated with no grace, the old one stops at once', async () => {
      const w = (
        await api(app, 'POST', `${base}/workloads`, token, { name: 'rotating', roleId: t.roleId })
      ).body as { id: string; clientId: string; clientSecret: string };
      const graced = await api(app, 'POST', `${base}/workloads/${w.id}/secret`, token, {
        graceSeconds: 600,
      });
      expect(graced.status).toBe(201);
      expect(Date.parse(graced.body.previousValidUntil as string) - Date.now()).toBeGreaterThan(
        590_000,
      );
      const second = graced.body.clientSecret as string;
      expect((await login(w.clientId, w.clientSecret)).status).toBe(200);
      expect((await login(w.clientId, second)).status).toBe(200);
      const third = (
        await api(app, 'POST', `${base}/workloads/${w.id}/secret`, token, { graceSeconds: 0 })
      ).body.clientSecret as string;
      expect((await login(w.clientId, second)).body.error).toBe('invalid_grant');
      expect((await login(w.clientId, w.clientSecret)).body.error).toBe('invalid_grant');
      expect((await login(w.clientId, third)).status).toBe(200);
      expect(
        (await api(app, 'POST', `${base}/workloads/${w.id}/secret`, token, { graceSeconds: -1 }))
          .status,
      ).toBe(400);
    });
  });

  describe('roles', () => {
    it('when roles are created, then catalogue permissions are accepted and unknown or platform ones are 400', async () => {
      const r = await api(app, 'POST', `${base}/roles`, token, {
        name: 'auditor',
        permissions: ['admin.audit.read', 'admin.keys.read'],
      });
      expect(r.status).toBe(201);
      expect(r.body).toMatchObject({
        name: 'auditor',
        permissions: ['admin.audit.read', 'admin.keys.read'],
      });
      const unknown = await api(app, 'POST', `${base}/roles`, token, {
        name: 'bad',
        permissions: ['admin.keys.read', 'admin.keys.teleport'],
      });
      expect(unknown.status).toBe(400);
      expect(unknown.body.unknownPermissions).toEqual(['admin.keys.teleport']);
      expect(
        (
          await api(app, 'POST', `${base}/roles`, token, {
            name: 'sneaky',
            permissions: ['admin.platform.tenants.create'],
          })
        ).status,
      ).toBe(400);
      expect(
        (await api(app, 'POST', `${base}/roles`, token, { name: 'auditor', permissions: [] }))
          .status,
      ).toBe(409);
      const patched = await api(app, 'PATCH', `${base}/roles/${r.body.id}`, token, {
        name: 'auditors',
        permissions: ['admin.audit.read'],
      });
      expect(patched.body).toMatchObject({ name: 'auditors', permissions: ['admin.audit.read'] });
      expect(
        (
          await api(app, 'PATCH', `${base}/roles/${r.body.id}`, token, {
            permissions: ['admin.platform.cross-tenant'],
          })
        ).status,
      ).toBe(400);
      expect((await api(app, 'GET', `${base}/roles/${r.body.id}`, token)).body.name).toBe(
        'auditors',
      );
      expect((await api(app, 'DELETE', `${base}/roles/${r.body.id}`, token)).status).toBe(204);
      expect((await api(app, 'GET', `${base}/roles/${r.body.id}`, token)).status).toBe(404);
    });

    it('when a role in use is deleted, then 409 and it stays', async () => {
      const r = await api(app, 'DELETE', `${base}/roles/${t.roleId}`, token);
      expect(r.status).toBe(409);
      expect((await api(app, 'GET', `${base}/roles`, token)).body.items).toEqual(
        expect.arrayContaining([expect.objectContaining({ id: t.roleId })]),
      );
    });
  });

  describe('human users', () => {
    it('when users are created, read, updated and deleted, then the password or its hash never appears and duplicates are 409', async () => {
      const password = 'a sufficiently long secret';
      const made = await api(app, 'POST', `${base}/users`, token, {
        email: 'Ops@Ident.test',
        password,
        roleId: t.roleId,
      });
      expect(made.status).toBe(201);
      expect(made.body).toMatchObject({
        email: 'ops@ident.test',
        roleId: t.roleId,
        disabled: false,
      });
      expect(
        (
          await api(app, 'POST', `${base}/users`, token, {
            email: 'ops@ident.test',
            password,
            roleId: t.roleId,
          })
        ).status,
      ).toBe(409);
      expect(
        (
          await api(app, 'POST', `${base}/users`, token, {
            email: 'short@ident.test',
            password: 'short',
            roleId: t.roleId,
          })
        ).status,
      ).toBe(400);
      const id = made.body.id as string;
      const read = await api(app, 'GET', `${base}/users/${id}`, token);
      const list = await api(app, 'GET', `${base}/users`, token);
      for (const text of [
        JSON.stringify(made.body),
        JSON.stringify(read.body),
        JSON.stringify(list.body),
      ]) {
        expect(text).not.toContain(password);
        expect(text).not.toMatch(/password|argon2/i);
      }
      const userLogin = () =>
        postForm(app, '/api/v3/auth/token', {
          grant_type: 'password',
          username: 'ops@ident.test',
          password,
          tenant_id: t.tenantId,
        });
      expect((await userLogin()).status).toBe(200);
      expect(
        (await api(app, 'PATCH', `${base}/users/${id}`, token, { disabled: true })).body.disabled,
      ).toBe(true);
      expect((await userLogin()).status).toBe(400);
      expect(
        (await api(app, 'PATCH', `${base}/users/${id}`, token, { roleId: crypto.randomUUID() }))
          .status,
      ).toBe(400);
      expect((await api(app, 'DELETE', `${base}/users/${id}`, token)).status).toBe(204);
      expect((await api(app, 'GET', `${base}/users/${id}`, token)).status).toBe(404);
    });

    it('when an admin triggers a password reset, then 202 and a reset link is written to the outbox for that user only', async () => {
      const user = await app.ctx
        .db('users')
        .where({ tenant_id: t.tenantId, email: t.userEmail })
        .first();
      const before = Number((await app.ctx.db('outbox').count({ n: '*' }).first())!.n);
      const r = await api(app, 'POST', `${base}/users/${user.id}/password-reset`, token);
      expect(r.status).toBe(202);
      const mail = await app.ctx.db('outbox').orderBy('id', 'desc').first();
      expect(Number((await app.ctx.db('outbox').count({ n: '*' }).first())!.n)).toBe(before + 1);
      expect(mail.recipient).toBe(t.userEmail);
      expect(mail.body).toMatch(/token=[\w-]+/);
    });
  });

  describe('policies', () => {
    it('when templates and the effective policy are read, then they list key types, rotation, token lifetimes and rate limits', async () => {
      const templates = await api(app, 'GET', `${base}/policies/templates`, token);
      expect((templates.body.items as Array<{ name: string }>).map((x) => x.name)).toEqual(
        expect.arrayContaining(['default', 'strict', 'pqc-only']),
      );
      const eff = await api(app, 'GET', `${base}/policies/effective`, token);
      expect(eff.body).toMatchObject({
        tenantId: t.tenantId,
        policy: {
          template: 'default',
          allowedKeyTypes: expect.arrayContaining(['rsa-2048']),
          rotationPeriodDays: 365,
          tokenLifetimes: expect.objectContaining({ clientCredentials: expect.any(Number) }),
          rateLimits: expect.objectContaining({ tokenRequestsPerMinute: expect.any(Number) }),
        },
      });
    });

    it('when the tenant overrides to strict, then rsa-2048 keys are a 422 policy violation and allowed types still work', async () => {
      expect(
        (await api(app, 'PUT', `${base}/policies/overrides`, token, { template: 'nonsense' }))
          .status,
      ).toBe(400);
      const put = await api(app, 'PUT', `${base}/policies/overrides`, token, {
        template: 'strict',
      });
      expect(put.body).toMatchObject({
        overrides: { template: 'strict' },
        policy: { template: 'strict', rotationPeriodDays: 90 },
      });
      expect(
        (
          (await api(app, 'GET', `${base}/policies/effective`, token)).body.policy as {
            allowedKeyTypes: string[];
          }
        ).allowedKeyTypes,
      ).not.toContain('rsa-2048');
      const refused = await api(app, 'POST', `${base}/keys`, token, { type: 'rsa-2048' });
      expect(refused.status).toBe(422);
      expect(refused.body.type).toMatch(/\/problems\/policy-violation$/);
      expect((await api(app, 'POST', `${base}/keys`, token, { type: 'aes-256' })).status).toBe(201);
      await api(app, 'PUT', `${base}/policies/overrides`, token, {});
      expect((await api(app, 'POST', `${base}/keys`, token, { type: 'rsa-2048' })).status).toBe(
        201,
      );
    });
  });
});
