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
import { PERMISSIONS, isPlatformPermission } from '../../../shared/permissions.ts';
import { ADMIN_ROUTES, idArea, type AdminRoute } from './admin-routes.ts';

interface Ids {
  tenantId: string;
  otherTenantId: string;
  workload: string;
  role: string;
  user: string;
  exchange: string;
  kid: string;
  operationId: string;
  accessKeyId: string;
}

/** The route with its placeholders filled: the path's tenant is `pathTenant`, every other id is the victim's. */
function fill(r: AdminRoute, pathTenant: string, victim: Ids): { path: string; body?: unknown } {
  const area = idArea(r.path);
  const id = area === 'tenant' ? victim.tenantId : area ? victim[area] : '';
  const path = r.path
    .replace('{tenantId}', pathTenant)
    .replace('{id}', id)
    .replace('{kid}', victim.kid)
    .replace('{operationId}', victim.operationId)
    .replace('{accessKeyId}', victim.accessKeyId);
  const body =
    r.body === undefined
      ? undefined
      : JSON.parse(
          JSON.stringify(r.body)
            .replace('{roleId}', victim.role)
            .replace('{kid}', victim.kid)
            .replace('{otherTenantId}', victim.otherTenantId),
        );
  return { path, body };
}

describe(`admin isolation matrix (${TEST_ENGINE})`, () => {
  let app: TestApp;
  let admin: string;
  let a: TestTenant;
  let b: TestTenant;
  let tokenA: string;
  let ids: Ids;
  const get = async (path: string) => (await api(app, 'GET', path, admin)).body;

  /** B's whole visible state, read by the platform administrator, plus the platform-wide state A might touch. */
  async function stateOfB() {
    const t = `/api/v3/admin/tenants/${b.tenantId}`;
    const workloads = (await get(`${t}/workloads`)).items as Array<{ id: string }>;
    const login = await postForm(app, '/api/v3/auth/token', {
      grant_type: 'client_credentials',
      client_id: b.clientId,
      client_secret: b.clientSecret,
    });
    return {
      tenant: await get(`/api/v3/admin/platform/tenants/${b.tenantId}`),
      self: await get(t),
      workloads,
      workloadDetails: await Promise.all(workloads.map((w) => get(`${t}/workloads/${w.id}`))),
      accessKeys: await Promise.all(
        workloads.map((w) => get(`${t}/workloads/${w.id}/access-keys`)),
      ),
      roles: await get(`${t}/roles`),
      users: await get(`${t}/users`),
      policy: await get(`${t}/policies/effective`),
      keys: await get(`${t}/keys`),
      archived: await get(`${t}/keys?state=archived`),
      key: await get(`${t}/keys/${ids.kid}`),
      exchanges: await get(`${t}/cryptographic-exchanges`),
      workloadLogin: login.status,
      tenants: (
        (await get('/api/v3/admin/platform/tenants?limit=500')).items as Array<{
          id: string;
          status: string;
        }>
      ).map((x) => `${x.id}:${x.status}`),
      revoked: await get('/api/v3/admin/platform/tokens/revoked'),
      jwks: await (await fetch(`${app.url}/.well-known/jwks.json`)).json(),
      outbox: Number((await app.ctx.db('outbox').count({ n: '*' }).first())!.n),
    };
  }

  beforeAll(async () => {
    app = await startTestApp();
    admin = await adminToken(app);
    const everyTenantPermission = PERMISSIONS.filter((p) => !isPlatformPermission(p));
    a = await makeTenant(app, everyTenantPermission, 'iso-a');
    b = await makeTenant(app, everyTenantPermission, 'iso-b');
    const c = await makeTenant(app, ['admin.cryptographicexchange.read'], 'iso-c');
    tokenA = await userToken(app, a);
    const tokenB = await userToken(app, b);
    const tb = `/api/v3/admin/tenants/${b.tenantId}`;
    expect(
      (await api(app, 'POST', `${tb}/keys`, tokenB, { type: 'ed25519', kid: 'b-only-key' })).status,
    ).toBe(201);
    const role = await api(app, 'POST', `${tb}/roles`, tokenB, {
      name: 'spare',
      permissions: ['admin.keys.read'],
    });
    const user = await api(app, 'POST', `${tb}/users`, tokenB, {
      email: 'second@iso-b.test',
      password: 'a long enough password',
      roleId: b.roleId,
    });
    const workload = await app.ctx.db('workloads').where({ tenant_id: b.tenantId }).first('id');
    const accessKey = await api(
      app,
      'POST',
      `${tb}/workloads/${workload.id}/access-keys`,
      tokenB,
      {},
    );
    expect(accessKey.status).toBe(201);
    const exchange = await api(app, 'POST', `${tb}/cryptographic-exchanges`, tokenB, {
      kid: 'b-only-key',
      toTenantId: c.tenantId,
      mode: 'public',
    });
    ids = {
      tenantId: b.tenantId,
      otherTenantId: c.tenantId,
      workload: workload.id,
      role: role.body.id as string,
      user: user.body.id as string,
      exchange: exchange.body.id as string,
      kid: 'b-only-key',
      operationId: crypto.randomUUID(),
      accessKeyId: accessKey.body.accessKeyId as string,
    };
  });
  afterAll(async () => {
    await app.stop();
  });

  it("when A's token calls every admin route on tenant B's path and ids, then 403 or 404 and B is unchanged", async () => {
    const before = await stateOfB();
    const answers: Array<[string, number]> = [];
    for (const r of ADMIN_ROUTES) {
      const { path, body } = fill(r, b.tenantId, ids);
      const res = await api(
        app,
        r.method,
        path,
        tokenA,
        body ?? (r.method === 'GET' || r.method === 'DELETE' ? undefined : {}),
      );
      answers.push([`${r.method} ${r.path}`, res.status]);
      expect(res.body).not.toHaveProperty('items');
    }
    expect(answers.filter(([, s]) => s !== 403 && s !== 404)).toEqual([]);
    expect(answers).toHaveLength(ADMIN_ROUTES.length);
    expect(await stateOfB()).toEqual(before);
  });

  it("when A's token names B's records on A's own path, then 404 (or 400 for a body reference) and B is unchanged", async () => {
    const before = await stateOfB();
    const answers: Array<[string, number]> = [];
    for (const r of ADMIN_ROUTES.filter((x) => x.path.startsWith('/api/v3/admin/tenants/'))) {
      const namesB = /\{(id|kid|operationId)\}/.test(r.path);
      const bodyNamesB = /\{(roleId|kid)\}/.test(JSON.stringify(r.body ?? ''));
      if (!namesB && !bodyNamesB) continue;
      const { path, body } = fill(r, a.tenantId, ids);
      const res = await api(
        app,
        r.method,
        path,
        tokenA,
        body ?? (r.method === 'GET' || r.method === 'DELETE' ? undefined : {}),
      );
      answers.push([`${r.method} ${r.path}`, res.status]);
      if (namesB)
        expect([`${r.method} ${r.path}`, res.status]).toEqual([`${r.method} ${r.path}`, 404]);
      else expect([400, 404]).toContain(res.status);
    }
    expect(answers.length).toBeGreaterThan(20);
    expect(await stateOfB()).toEqual(before);
  });

  it("when A lists its own records, then none of B's appear, while the platform admin sees them in B", async () => {
    const ta = `/api/v3/admin/tenants/${a.tenantId}`;
    const secretsOfB = [
      b.tenantId,
      b.clientId,
      b.userEmail,
      ids.workload,
      ids.role,
      ids.user,
      ids.exchange,
      ids.kid,
    ];
    for (const path of [
      'workloads',
      'roles',
      'users',
      'keys',
      'keys?state=archived',
      'keys?state=active',
      'cryptographic-exchanges',
      'cryptographic-exchanges?direction=incoming',
    ]) {
      const r = await api(app, 'GET', `${ta}/${path}`, tokenA);
      expect([path, r.status]).toEqual([path, 200]);
      const text = JSON.stringify(r.body);
      for (const s of secretsOfB) expect([path, text.includes(s)]).toEqual([path, false]);
    }
    const seen = JSON.stringify(
      await Promise.all(
        ['workloads', 'roles', 'users', 'keys', 'cryptographic-exchanges'].map((p) =>
          get(`/api/v3/admin/tenants/${b.tenantId}/${p}`),
        ),
      ),
    );
    for (const s of [ids.workload, ids.role, ids.user, ids.exchange, ids.kid])
      expect(seen).toContain(s);
  });
});
