/**
 * A standard OAuth library against Keyward, as a resource server would run it:
 * openid-client 6 discovers the server from its RFC 8414 metadata, takes client_credentials
 * tokens with client_secret_basic and client_secret_post, introspects them with both methods
 * (RFC 7662 2.1), revokes them (RFC 7009), and jose verifies them against the JWKS. Before,
 * introspection took only a bearer token, so the library got 401 with a bearer challenge.
 */
import * as client from 'openid-client';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { startTestApp, type TestApp } from '../../../support/app.ts';
import { TEST_ENGINE } from '../../../support/database.ts';
import { freePort } from '../../../support/free-port.ts';
import { makeTenant, postForm, type TestTenant } from '../../../support/auth.ts';
import { createRole } from '../../../api/services/admin/roles.ts';
import { registerWorkload } from '../../../api/services/admin/workloads.ts';

const INTROSPECT = '/api/v3/auth/token/introspect';
const basic = (id: string, secret: string) =>
  `Basic ${Buffer.from(`${id}:${secret}`, 'utf8').toString('base64')}`;

/** openid-client's configuration for one workload, found by discovery over plain HTTP (a test server). */
function discover(app: TestApp, w: TestTenant, auth: 'basic' | 'post') {
  return client.discovery(
    new URL(app.url),
    w.clientId,
    undefined,
    auth === 'basic'
      ? client.ClientSecretBasic(w.clientSecret)
      : client.ClientSecretPost(w.clientSecret),
    { algorithm: 'oauth2', execute: [client.allowInsecureRequests] },
  );
}

describe(`openid-client 6 as a resource server (${TEST_ENGINE})`, () => {
  let app: TestApp;
  let rs: TestTenant;
  beforeAll(async () => {
    // The issuer is checked against the discovery URL, so the service listens where it says it is.
    const port = await freePort();
    app = await startTestApp(
      { PUBLIC_BASE_URL: `http://127.0.0.1:${port}`, RATE_LIMIT_FAILURES_PER_MINUTE: '3' },
      undefined,
      port,
    );
    rs = await makeTenant(app, ['auth.introspect.self', 'crypto.keys.read']);
  });
  afterAll(async () => {
    await app.stop();
  });

  it('when discovered, then the metadata names the endpoints and exactly the introspection methods accepted', async () => {
    const config = await discover(app, rs, 'basic');
    const meta = config.serverMetadata();
    expect(meta.issuer).toBe(app.url);
    expect(meta.introspection_endpoint).toBe(`${app.url}${INTROSPECT}`);
    expect(meta.introspection_endpoint_auth_methods_supported).toEqual([
      'client_secret_basic',
      'client_secret_post',
      'bearer',
    ]);
    expect(meta.token_endpoint_auth_methods_supported).toEqual(
      expect.arrayContaining(['client_secret_basic', 'client_secret_post']),
    );
  });

  for (const auth of ['basic', 'post'] as const) {
    it(`when client_secret_${auth} is used throughout, then the token verifies against the JWKS, introspects active, and inactive after revocation`, async () => {
      const config = await discover(app, rs, auth);
      const tokens = await client.clientCredentialsGrant(config);
      expect(tokens.token_type).toBe('bearer');
      const jwks = createRemoteJWKSet(new URL(config.serverMetadata().jwks_uri!));
      const { payload } = await jwtVerify(tokens.access_token, jwks, {
        issuer: app.url,
        audience: 'service-core',
      });
      expect(payload.client_id).toBe(rs.clientId);

      const active = await client.tokenIntrospection(config, tokens.access_token);
      expect(active).toMatchObject({
        active: true,
        client_id: rs.clientId,
        jti: payload.jti,
        tenantId: rs.tenantId,
        token_type: 'Bearer',
      });

      await client.tokenRevocation(config, tokens.access_token);
      expect(await client.tokenIntrospection(config, tokens.access_token)).toEqual({
        active: false,
      });
    });
  }

  it("when a resource server with auth.introspect.self introspects another client's token, then inactive; with admin.platform.introspect, active", async () => {
    const other = await makeTenant(app, ['crypto.keys.read']);
    const config = await discover(app, other, 'post');
    const theirs = (await client.clientCredentialsGrant(config)).access_token;
    expect(await client.tokenIntrospection(await discover(app, rs, 'basic'), theirs)).toEqual({
      active: false,
    });
    // A platform resource server: its role may hold the platform permission.
    const role = await createRole(app.ctx, app.platformTenantId, {
      name: 'resource-server',
      permissions: ['admin.platform.introspect'],
    });
    const w = await registerWorkload(app.ctx, app.platformTenantId, {
      name: 'rs',
      roleId: role.id,
    });
    const platform = await discover(
      app,
      { ...rs, clientId: w.clientId, clientSecret: w.clientSecret },
      'basic',
    );
    expect(await client.tokenIntrospection(platform, theirs)).toMatchObject({
      active: true,
      client_id: other.clientId,
      tenantId: other.tenantId,
    });
  });

  it('when the client holds no introspection permission, then 403 unauthorized_client (its credentials were right)', async () => {
    const plain = await makeTenant(app, ['crypto.keys.read']);
    const r = await postForm(
      app,
      INTROSPECT,
      { token: 'x' },
      { authorization: basic(plain.clientId, plain.clientSecret) },
    );
    expect([r.status, r.body.error]).toEqual([403, 'unauthorized_client']);
  });

  it('when no credentials are sent, then 401 invalid_client with Bearer and Basic challenges', async () => {
    const r = await postForm(app, INTROSPECT, { token: 'x' });
    expect([r.status, r.body.error]).toEqual([401, 'invalid_client']);
    expect(r.headers.get('www-authenticate')).toMatch(/^Bearer realm="keyward", Basic realm=/);
  });

  it('when client authentication fails by Basic and by the form, then 401 invalid_client with a Basic challenge, and the failures spend the token endpoint budget of that client', async () => {
    const victim = await makeTenant(app, ['auth.introspect.self']);
    const statuses: Array<[number, unknown, string | null]> = [];
    const push = (r: Awaited<ReturnType<typeof postForm>>) =>
      statuses.push([r.status, r.body.error, r.headers.get('www-authenticate')]);
    push(
      await postForm(
        app,
        INTROSPECT,
        { token: 'x' },
        { authorization: basic(victim.clientId, crypto.randomUUID()) },
      ),
    );
    push(
      await postForm(app, INTROSPECT, {
        token: 'x',
        client_id: victim.clientId,
        client_secret: crypto.randomUUID(),
      }),
    );
    // The third failure is at the token endpoint: one budget for both endpoints.
    push(
      await postForm(app, '/api/v3/auth/token', {
        grant_type: 'client_credentials',
        client_id: victim.clientId,
        client_secret: crypto.randomUUID(),
      }),
    );
    expect(statuses).toEqual([
      [401, 'invalid_client', expect.stringMatching(/^Basic realm="keyward"/)],
      [401, 'invalid_client', expect.stringMatching(/^Basic realm="keyward"/)],
      [400, 'invalid_grant', null],
    ]);
    const limited = await postForm(
      app,
      INTROSPECT,
      { token: 'x' },
      { authorization: basic(victim.clientId, victim.clientSecret) },
    );
    expect([limited.status, limited.body.error]).toEqual([429, 'too_many_requests']);
    const tokenLimited = await postForm(app, '/api/v3/auth/token', {
      grant_type: 'client_credentials',
      client_id: victim.clientId,
      client_secret: victim.clientSecret,
    });
    expect(tokenLimited.status).toBe(429);
    await app.ctx.audit.flush();
    const events = await app.ctx
      .db('audit_events')
      .where({ tenant_id: victim.tenantId, action: 'auth.token.introspect', outcome: 'failure' });
    expect(events.length).toBe(2);
  });

  it('when a bearer token and client credentials in the form come together, then invalid_request', async () => {
    const r = await postForm(
      app,
      INTROSPECT,
      { token: 'x', client_id: rs.clientId, client_secret: rs.clientSecret },
      { authorization: 'Bearer y' },
    );
    expect([r.status, r.body.error]).toEqual([400, 'invalid_request']);
  });
});
