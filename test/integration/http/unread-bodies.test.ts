/**
 * A refusal answered before the request's body was read asks the client to close (Connection:
 * close) on Express as on the runtime lane. Kept alive instead, Node reads the rest of the body
 * to reuse the connection: an unauthorised client could make the service read what it announced
 * (a streamed upload has no size limit) until the overall body deadline cut it.
 */
import { startTestApp, type TestApp } from '../../../support/app.ts';
import { makeTenant, userToken, type TestTenant } from '../../../support/auth.ts';
import { rawRequest } from '../../support/raw-http.ts';

let app: TestApp;
let t: TestTenant;
let token: string;

beforeAll(async () => {
  app = await startTestApp();
  // A role without migration.uploads.write, admin.keys.import or crypto.sign.
  t = await makeTenant(app, ['crypto.encrypt']);
  token = await userToken(app, t);
}, 60_000);

afterAll(async () => {
  await app.stop();
});

/** A request announcing 50 MiB of which 1,000 bytes are sent, and what its answer says of the connection. */
async function refused(method: string, target: string, headers: Record<string, string>) {
  const a = await rawRequest(app.url, {
    method,
    target,
    headers,
    body: 'x'.repeat(1000),
    contentLength: 50 * 1024 * 1024,
    deadlineMs: 3000,
  });
  return `${method} ${target.split('?')[0]} ${a.status} ${a.hung ? 'hung' : a.headers.get('connection')}`;
}

it('when a request is refused before its body is read, then the answer asks the client to close, on Express as on the lane', async () => {
  const bearer = { authorization: `Bearer ${token}` };
  const form = { ...bearer, 'content-type': 'multipart/form-data; boundary=XB' };
  const answers = [
    // The area's bearer check (no token), then a streamed row's permission check.
    await refused('PUT', '/api/v3/migration/uploads/a.p7m', {}),
    await refused('PUT', '/api/v3/migration/uploads/a.p7m', bearer),
    await refused('POST', '/api/v3/migration/stream/convert-pkcs7-to-jose', form),
    await refused('POST', `/api/v3/admin/tenants/${t.tenantId}/keys/import-keystore`, form),
    // A JSON row's permission check, ahead of its reader.
    await refused('POST', `/api/v3/admin/tenants/${t.tenantId}/roles`, {
      ...bearer,
      'content-type': 'application/json',
    }),
    // The runtime lane, which already did (a user's token is not of its audience).
    await refused('POST', '/api/v3/crypto/sign', { ...bearer, 'content-type': 'application/json' }),
  ];
  expect(answers).toEqual([
    'PUT /api/v3/migration/uploads/a.p7m 401 close',
    'PUT /api/v3/migration/uploads/a.p7m 403 close',
    'POST /api/v3/migration/stream/convert-pkcs7-to-jose 403 close',
    `POST /api/v3/admin/tenants/${t.tenantId}/keys/import-keystore 403 close`,
    `POST /api/v3/admin/tenants/${t.tenantId}/roles 403 close`,
    'POST /api/v3/crypto/sign 401 close',
  ]);
});

it('when a request without a body is refused, then the connection stays open for the next one', async () => {
  const a = await rawRequest(app.url, {
    method: 'GET',
    target: '/api/v3/crypto/keys',
    headers: {},
  });
  expect([a.status, a.headers.get('connection')]).toEqual([401, 'keep-alive']);
});
