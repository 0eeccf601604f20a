/**
 * Hostile requests against a route row over a real socket, on the users list of the
 * admin API: the query converter reads only plain decimal text as a number, odd query shapes are
 * a 400 (never a 5xx), and the row's access check holds for HEAD, a trailing slash and another
 * letter case of the path.
 */
import { startTestApp, type TestApp } from '../../../support/app.ts';
import { api, makeTenant, userToken, type TestTenant } from '../../../support/auth.ts';

let app: TestApp;
let reader: TestTenant;
let readerToken: string;
let outsiderToken: string;
let outsiderTenant: string;

beforeAll(async () => {
  app = await startTestApp();
  reader = await makeTenant(app, ['admin.humanuser.read']);
  readerToken = await userToken(app, reader);
  // A tenant's own user without a permission on users: the row's access check must refuse it.
  const outsider = await makeTenant(app, ['crypto.encrypt']);
  outsiderToken = await userToken(app, outsider);
  outsiderTenant = outsider.tenantId;
}, 60_000);

afterAll(async () => {
  await app.stop();
});

const users = (tenantId: string, query = '') => `/api/v3/admin/tenants/${tenantId}/users${query}`;

describe('query numbers', () => {
  it('reads plain decimal text', async () => {
    const r = await api(app, 'GET', users(reader.tenantId, '?limit=16'), readerToken);
    expect(r.status).toBe(200);
  });

  it.each(['0x10', '1e1', '%201', '%2B1', '0b1', '', 'Infinity', '1e400', '%00'])(
    'refuses limit=%s with a 400 naming limit',
    async (raw) => {
      const r = await api(app, 'GET', users(reader.tenantId, `?limit=${raw}`), readerToken);
      expect(r.status).toBe(400);
      expect(String(r.body.detail)).toMatch(/\blimit /);
    },
  );

  it.each(['?limit=1&limit=2', '?limit[a]=1', '?__proto__=1', '?constructor[prototype][x]=1'])(
    'answers %s without a 5xx',
    async (query) => {
      const r = await api(app, 'GET', users(reader.tenantId, query), readerToken);
      expect(r.status).toBeLessThan(500);
    },
  );
});

describe('access check', () => {
  it.each([
    ['GET', ''],
    ['HEAD', ''],
    ['GET', '/'],
  ])('refuses %s with path suffix %j to a token without the permission', async (method, tail) => {
    const r = await api(app, method, `${users(outsiderTenant)}${tail}`, outsiderToken);
    expect(r.status).toBe(403);
  });

  it('refuses another letter case of the path, or answers it as no route', async () => {
    const path = users(outsiderTenant).replace('/users', '/USERS');
    const r = await api(app, 'GET', path, outsiderToken);
    expect([403, 404]).toContain(r.status);
  });
});
