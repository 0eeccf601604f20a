/**
 * client_secret_basic at the token endpoint (RFC 6749 2.3.1): the workload's
 * credentials in `Authorization: Basic base64(urlencode(id):urlencode(secret))`, with the same
 * failure rules and budget as the form fields; both at once is invalid_request.
 */
import { startTestApp, type TestApp } from '../../../support/app.ts';
import { TEST_ENGINE } from '../../../support/database.ts';
import { api, makeTenant, postForm, type TestTenant } from '../../../support/auth.ts';

const TOKEN = '/api/v3/auth/token';
const basic = (id: string, secret: string) =>
  `Basic ${Buffer.from(`${id}:${secret}`, 'utf8').toString('base64')}`;
const CC = { grant_type: 'client_credentials' };

describe(`client_secret_basic at the token endpoint (${TEST_ENGINE})`, () => {
  let app: TestApp;
  let t: TestTenant;
  beforeAll(async () => {
    // A small failure budget, so the shared-budget test needs few requests.
    app = await startTestApp({ RATE_LIMIT_FAILURES_PER_MINUTE: '3' });
    t = await makeTenant(app, ['crypto.keys.read']);
  });
  afterAll(async () => {
    await app.stop();
  });

  it('when a workload authenticates by HTTP Basic, then 200 with a service-core token that the runtime API accepts, where before it was refused', async () => {
    const r = await postForm(app, TOKEN, CC, { authorization: basic(t.clientId, t.clientSecret) });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      token_type: 'Bearer',
      expires_in: app.config.accessTokenTtl,
      passwordChangeEligible: false,
    });
    expect(r.body.refresh_token).toBeUndefined();
    expect(
      (await api(app, 'GET', '/api/v3/crypto/keys', r.body.access_token as string)).status,
    ).toBe(200);
  });

  it('when the credentials are form-urlencoded before base64 and the scheme is written in another case, then they still authenticate', async () => {
    // RFC 6749 2.3.1 encodes each part; "-" may arrive as %2D. The scheme name is case-insensitive (RFC 9110 11.1).
    const id = t.clientId.toUpperCase().replaceAll('-', '%2D');
    const r = await postForm(app, TOKEN, CC, {
      authorization: basic(id, t.clientSecret).replace('Basic', 'bAsIc'),
    });
    expect(r.status).toBe(200);
  });

  it('when the same client_id is also in the form, then it is accepted; another client_id or a client_secret in the form is invalid_request', async () => {
    expect(
      (
        await postForm(
          app,
          TOKEN,
          { ...CC, client_id: t.clientId },
          { authorization: basic(t.clientId, t.clientSecret) },
        )
      ).status,
    ).toBe(200);
    for (const form of [
      { ...CC, client_secret: t.clientSecret },
      { ...CC, client_id: crypto.randomUUID() },
      { ...CC, client_id: t.clientId, client_secret: t.clientSecret },
    ]) {
      const r = await postForm(app, TOKEN, form, {
        authorization: basic(t.clientId, t.clientSecret),
      });
      expect([form, r.status, r.body.error]).toEqual([form, 400, 'invalid_request']);
    }
  });

  it('when Basic authentication fails (wrong secret, unknown client, undecodable header), then 401 invalid_client with a Basic challenge (RFC 6749 5.2)', async () => {
    const other = await makeTenant(app, ['crypto.keys.read']);
    const headers = [
      basic(other.clientId, crypto.randomUUID()),
      basic(crypto.randomUUID(), crypto.randomUUID()),
      'Basic !!!',
      `Basic ${Buffer.from('no-colon').toString('base64')}`,
      basic('%ZZ', 'x'),
      'Basic',
    ];
    for (const authorization of headers) {
      const r = await postForm(app, TOKEN, CC, { authorization });
      expect([authorization, r.status, r.body.error]).toEqual([
        authorization,
        401,
        'invalid_client',
      ]);
      expect([authorization, r.headers.get('www-authenticate')]).toEqual([
        authorization,
        expect.stringMatching(/^Basic realm="keyward"/),
      ]);
    }
    // The form keeps the token endpoint's RFC 6749 error answers.
    expect(
      (
        await postForm(app, TOKEN, {
          ...CC,
          client_id: other.clientId,
          client_secret: crypto.randomUUID(),
        })
      ).body.error,
    ).toBe('invalid_grant');
  });

  it('when failures arrive by the form and by Basic for one client, then they spend the same budget and the next attempt is 429', async () => {
    const victim = await makeTenant(app, ['crypto.keys.read']);
    const statuses: number[] = [];
    statuses.push(
      (
        await postForm(app, TOKEN, {
          ...CC,
          client_id: victim.clientId,
          client_secret: crypto.randomUUID(),
        })
      ).status,
    );
    statuses.push(
      (
        await postForm(app, TOKEN, CC, {
          authorization: basic(victim.clientId.toUpperCase(), crypto.randomUUID()),
        })
      ).status,
    );
    statuses.push(
      (
        await postForm(app, TOKEN, CC, {
          authorization: basic(victim.clientId, crypto.randomUUID()),
        })
      ).status,
    );
    const limited = await postForm(app, TOKEN, CC, {
      authorization: basic(victim.clientId, victim.clientSecret),
    });
    expect(statuses).toEqual([400, 401, 401]);
    expect(limited.status).toBe(429);
    expect(limited.body.error).toBe('too_many_requests');
  });

  it('when Basic credentials come with a grant that authenticates no client, then invalid_request rather than silently ignored', async () => {
    const r = await postForm(
      app,
      TOKEN,
      { grant_type: 'refresh_token', refresh_token: 'rt_x' },
      { authorization: basic(t.clientId, t.clientSecret) },
    );
    expect(r.status).toBe(400);
    expect(r.body.error).toBe('invalid_request');
  });

  it('when the server metadata is read, then it lists client_secret_basic among the token endpoint auth methods (RFC 8414)', async () => {
    const r = await api(app, 'GET', '/.well-known/oauth-authorization-server');
    expect(r.body.token_endpoint_auth_methods_supported).toEqual(
      expect.arrayContaining(['client_secret_basic', 'client_secret_post']),
    );
  });
});
