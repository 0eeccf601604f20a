/**
 * The Auth API, the legacy login and the well-known documents as route rows: the
 * answers the rows' framework gives them, where the hand-written routers disagreed or said less.
 * Form refusals name the field in the OAuth shape; the legacy login's refusals keep the OAuth
 * shape and its wrong method is a 405 like the Auth API's (it was a 400 invalid_request).
 */
import { startTestApp, type TestApp } from '../../../support/app.ts';
import { postForm } from '../../../support/auth.ts';

let app: TestApp;

beforeAll(async () => {
  app = await startTestApp();
}, 60_000);

afterAll(async () => {
  await app.stop();
});

const send = (path: string, init: RequestInit = {}) => fetch(`${app.url}${path}`, init);

describe('form rows', () => {
  it('when forgot-password lacks tenant_id, then 400 invalid_request naming it (was "email and tenant_id are required"), never cached', async () => {
    const r = await postForm(app, '/api/v3/auth/password/forgot', { email: 'a@b.test' });
    expect([r.status, r.body.error, r.body.error_description]).toEqual([
      400,
      'invalid_request',
      'tenant_id is required',
    ]);
    expect(r.headers.get('cache-control')).toBe('no-store');
  });

  it('when introspection names no token, then 400 invalid_request naming token', async () => {
    const r = await postForm(app, '/api/v3/auth/token/introspect', { token_type_hint: 'x' });
    expect([r.status, r.body.error, r.body.error_description]).toEqual([
      400,
      'invalid_request',
      'token is required',
    ]);
  });

  it('when a form row gets JSON, then the form reader refuses it (unsupported_grant_type)', async () => {
    const r = await send('/api/v3/auth/token/revoke', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"token":"x"}',
    });
    expect(r.status).toBe(400);
    expect(((await r.json()) as { error: string }).error).toBe('unsupported_grant_type');
  });

  it('when an auth path is called with another method, then 405 in the OAuth shape, never cached', async () => {
    const r = await send('/api/v3/auth/password/reset');
    expect([r.status, r.headers.get('allow'), r.headers.get('cache-control')]).toEqual([
      405,
      'POST',
      'no-store',
    ]);
    expect(((await r.json()) as { error: string }).error).toBe('method_not_allowed');
  });
});

describe('legacy login rows', () => {
  it.each([
    ['a text body', 'text/plain', 'clientId=x'],
    ['a JSON array', 'application/json', '[1]'],
    ['malformed JSON', 'application/json', '{"clientId":'],
    ['a body over 16 KiB', 'application/json', `{"clientId":"${'x'.repeat(20_000)}"}`],
  ])('when the body is %s, then 400 invalid_request', async (_label, type, body) => {
    const r = await send('/api/authenticate/app', {
      method: 'POST',
      headers: { 'content-type': type },
      body,
    });
    expect(r.status).toBe(400);
    expect(((await r.json()) as { error: string }).error).toBe('invalid_request');
  });

  it('when the legacy login is called with GET, then 405 method_not_allowed in the OAuth shape (was 400 invalid_request)', async () => {
    const r = await send('/api/authenticate/app');
    expect([r.status, r.headers.get('allow')]).toEqual([405, 'POST']);
    expect(((await r.json()) as { error: string }).error).toBe('method_not_allowed');
  });

  it('when a path under /api/authenticate is unknown, then 404 in the OAuth shape, never cached, like the Auth API (it was a problem+json without Cache-Control)', async () => {
    const r = await send('/api/authenticate/no-such-path', { method: 'POST' });
    expect([r.status, r.headers.get('cache-control'), await r.json()]).toEqual([
      404,
      'no-store',
      {
        error: 'not_found',
        error_description: 'no endpoint at POST /api/authenticate/no-such-path',
      },
    ]);
  });
});

describe('well-known rows', () => {
  it('when the JWKS is fetched, then it may be cached a minute', async () => {
    const r = await send('/.well-known/jwks.json');
    expect([r.status, r.headers.get('cache-control')]).toEqual([200, 'public, max-age=60']);
  });
});
