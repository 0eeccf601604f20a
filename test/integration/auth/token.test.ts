import { compactVerify, createRemoteJWKSet, jwtVerify } from 'jose';
import { startTestApp, ADMIN_PASSWORD, type TestApp } from '../../../support/app.ts';
import { TEST_ENGINE } from '../../../support/database.ts';
import {
  adminToken,
  api,
  makeTenant,
  postForm,
  workloadToken,
  type TestTenant,
} from '../../../support/auth.ts';

const TOKEN = '/api/v3/auth/token';

describe(`token endpoint (${TEST_ENGINE})`, () => {
  let app: TestApp;
  let t: TestTenant;
  beforeAll(async () => {
    app = await startTestApp({ RATE_LIMIT_FAILURES_PER_MINUTE: '1000' });
    t = await makeTenant(app, [
      'crypto.encrypt',
      'crypto.keys.read',
      'admin.keys.read',
      'auth.token-exchange',
    ]);
  });
  afterAll(async () => {
    await app.stop();
  });

  describe('the error table of the token endpoint', () => {
    it('when the body is JSON, then 400 unsupported_grant_type', async () => {
      const res = await fetch(`${app.url}${TOKEN}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ grant_type: 'client_credentials' }),
      });
      expect(res.status).toBe(400);
      expect(((await res.json()) as any).error).toBe('unsupported_grant_type');
    });
    it('when the content type is text/plain, then 400 unsupported_grant_type', async () => {
      const res = await fetch(`${app.url}${TOKEN}`, {
        method: 'POST',
        headers: { 'content-type': 'text/plain' },
        body: 'grant_type=client_credentials',
      });
      expect(res.status).toBe(400);
      expect(((await res.json()) as any).error).toBe('unsupported_grant_type');
    });
    it('when grant_type is missing, then 400 invalid_request', async () => {
      const r = await postForm(app, TOKEN, { client_id: t.clientId });
      expect(r.status).toBe(400);
      expect(r.body.error).toBe('invalid_request');
    });
    it('when a required field is missing, then 400 invalid_request', async () => {
      const r = await postForm(app, TOKEN, {
        grant_type: 'client_credentials',
        client_id: t.clientId,
      });
      expect(r.status).toBe(400);
      expect(r.body.error).toBe('invalid_request');
    });
    it('when the form body is malformed, then 400 invalid_request', async () => {
      const res = await fetch(`${app.url}${TOKEN}`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'grant_type=client_credentials&grant_type=password',
      });
      expect(res.status).toBe(400);
      expect(((await res.json()) as any).error).toBe('invalid_request');
    });
    it('when the grant type is unknown, then 400 unsupported_grant_type', async () => {
      const r = await postForm(app, TOKEN, { grant_type: 'implicit' });
      expect(r.status).toBe(400);
      expect(r.body.error).toBe('unsupported_grant_type');
    });
    it('when the client secret is wrong, then 400 invalid_grant', async () => {
      const r = await postForm(app, TOKEN, {
        grant_type: 'client_credentials',
        client_id: t.clientId,
        client_secret: crypto.randomUUID(),
      });
      expect(r.status).toBe(400);
      expect(r.body.error).toBe('invalid_grant');
    });
    it('when the password is wrong, then 400 invalid_grant', async () => {
      const r = await postForm(app, TOKEN, {
        grant_type: 'password',
        username: t.userEmail,
        password: 'wrong password!!',
        tenant_id: t.tenantId,
      });
      expect(r.status).toBe(400);
      expect(r.body.error).toBe('invalid_grant');
    });
    it('when the client id is unknown, then 401 invalid_client', async () => {
      const r = await postForm(app, TOKEN, {
        grant_type: 'client_credentials',
        client_id: crypto.randomUUID(),
        client_secret: crypto.randomUUID(),
      });
      expect(r.status).toBe(401);
      expect(r.body.error).toBe('invalid_client');
    });
    it('when the workload is disabled, then 401 invalid_client', async () => {
      const other = await makeTenant(app, ['crypto.encrypt']);
      await app.ctx.db('workloads').where({ client_id: other.clientId }).update({ disabled: true });
      await app.ctx.auth.secrets.invalidate(other.clientId);
      const r = await postForm(app, TOKEN, {
        grant_type: 'client_credentials',
        client_id: other.clientId,
        client_secret: other.clientSecret,
      });
      expect(r.status).toBe(401);
      expect(r.body.error).toBe('invalid_client');
    });
  });

  describe('grants', () => {
    it('when a workload uses client_credentials, then a 36000 s service-core token without refresh token, with passwordChangeEligible', async () => {
      const r = await postForm(app, TOKEN, {
        grant_type: 'client_credentials',
        client_id: t.clientId,
        client_secret: t.clientSecret,
      });
      expect(r.status).toBe(200);
      expect(r.headers.get('cache-control')).toBe('no-store');
      expect(r.body).toEqual({
        access_token: expect.any(String),
        token_type: 'Bearer',
        expires_in: 36000,
        passwordChangeEligible: false,
      });
      const jwks = createRemoteJWKSet(new URL(`${app.url}/.well-known/jwks.json`));
      const { payload, protectedHeader } = await jwtVerify(r.body.access_token as string, jwks, {
        issuer: app.config.publicBaseUrl,
        audience: 'service-core',
        typ: 'at+jwt',
        algorithms: ['ES256'],
      });
      expect(protectedHeader.kid).toEqual(expect.any(String));
      expect(payload).toMatchObject({
        tenantId: t.tenantId,
        client_id: t.clientId,
        permissions: expect.arrayContaining(['crypto.encrypt']),
      });
      expect(payload.exp! - payload.iat!).toBe(36000);
      expect(payload.jti).toEqual(expect.any(String));
    });

    it('when a user uses the password grant, then a service-admin token and a refresh token', async () => {
      const r = await postForm(app, TOKEN, {
        grant_type: 'password',
        username: t.userEmail.toUpperCase(),
        password: t.userPassword,
        tenant_id: t.tenantId,
      });
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({
        token_type: 'Bearer',
        expires_in: expect.any(Number),
        refresh_token: expect.stringMatching(/^rt_/),
      });
      const { payload } = await jwtVerify(
        r.body.access_token as string,
        createRemoteJWKSet(new URL(`${app.url}/.well-known/jwks.json`)),
        { audience: 'service-admin' },
      );
      expect(payload.tenantId).toBe(t.tenantId);
    });

    it('when remember_me=true, then the refresh token lives longer', async () => {
      const short = await postForm(app, TOKEN, {
        grant_type: 'password',
        username: t.userEmail,
        password: t.userPassword,
        tenant_id: t.tenantId,
      });
      const long = await postForm(app, TOKEN, {
        grant_type: 'password',
        username: t.userEmail,
        password: t.userPassword,
        tenant_id: t.tenantId,
        remember_me: 'true',
      });
      const { createHash } = await import('node:crypto');
      const exp = async (rt: string) =>
        new Date(
          (
            await app.ctx
              .db('refresh_tokens')
              .where({ token_hash: createHash('sha256').update(rt).digest('hex') })
              .first()
          ).expires_at,
        ).getTime();
      expect(await exp(long.body.refresh_token as string)).toBeGreaterThan(
        (await exp(short.body.refresh_token as string)) + 24 * 3600 * 1000,
      );
    });

    it('when a refresh token is used, then it rotates; when the used one is presented again, then the whole family is revoked and audited', async () => {
      const login = await postForm(app, TOKEN, {
        grant_type: 'password',
        username: t.userEmail,
        password: t.userPassword,
        tenant_id: t.tenantId,
      });
      const first = login.body.refresh_token as string;
      const second = await postForm(app, TOKEN, {
        grant_type: 'refresh_token',
        refresh_token: first,
      });
      expect(second.status).toBe(200);
      expect(second.body.refresh_token).not.toBe(first);
      const { payload } = await jwtVerify(
        second.body.access_token as string,
        createRemoteJWKSet(new URL(`${app.url}/.well-known/jwks.json`)),
        { audience: 'service-admin' },
      );
      expect(payload.tenantId).toBe(t.tenantId);
      const replay = await postForm(app, TOKEN, {
        grant_type: 'refresh_token',
        refresh_token: first,
      });
      expect(replay.status).toBe(400);
      expect(replay.body.error).toBe('invalid_grant');
      const afterReuse = await postForm(app, TOKEN, {
        grant_type: 'refresh_token',
        refresh_token: second.body.refresh_token as string,
      });
      expect(afterReuse.status).toBe(400);
      await app.ctx.audit.flush();
      expect(
        await app.ctx
          .db('audit_events')
          .where({ tenant_id: t.tenantId, action: 'auth.refresh.reuse-detected' })
          .first(),
      ).toBeTruthy();
    });

    it('when a token is exchanged for its own tenant, then a 900 s token with act; for another tenant without platform power, then invalid_target', async () => {
      const subject = await workloadToken(app, t);
      const same = await postForm(app, TOKEN, {
        grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
        subject_token: subject,
        resource: `urn:keyward:tenant:${t.tenantId}:core`,
      });
      expect(same.status).toBe(200);
      expect(same.body.expires_in).toBe(900);
      expect(same.body.refresh_token).toBeUndefined();
      const { payload } = await jwtVerify(
        same.body.access_token as string,
        createRemoteJWKSet(new URL(`${app.url}/.well-known/jwks.json`)),
        { audience: 'service-core' },
      );
      expect(payload.act).toEqual({
        sub: expect.any(String),
        tenantId: t.tenantId,
        jti: expect.any(String),
      });
      const other = await makeTenant(app, []);
      const cross = await postForm(app, TOKEN, {
        grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
        subject_token: subject,
        resource: `urn:keyward:tenant:${other.tenantId}:core`,
      });
      expect(cross.status).toBe(400);
      expect(cross.body.error).toBe('invalid_target');
    });

    it('when the platform admin exchanges into a tenant, then an admin token for that tenant without platform permissions, audited in both tenants', async () => {
      const admin = await adminToken(app);
      const r = await postForm(app, TOKEN, {
        grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
        subject_token: admin,
        resource: `urn:keyward:tenant:${t.tenantId}:admin`,
      });
      expect(r.status).toBe(200);
      const { payload } = await jwtVerify(
        r.body.access_token as string,
        createRemoteJWKSet(new URL(`${app.url}/.well-known/jwks.json`)),
        { audience: 'service-admin' },
      );
      expect(payload.tenantId).toBe(t.tenantId);
      expect((payload.permissions as string[]).some((p) => p.startsWith('admin.platform.'))).toBe(
        false,
      );
      await app.ctx.audit.flush();
      for (const tenantId of [t.tenantId, app.platformTenantId]) {
        expect(
          await app.ctx
            .db('audit_events')
            .where({ tenant_id: tenantId, action: 'auth.token.exchange', outcome: 'success' })
            .first(),
        ).toBeTruthy();
      }
    });
  });

  describe('token audiences kept apart', () => {
    it('when no token is sent to an admin endpoint, then 401 problem without an error member', async () => {
      const r = await api(app, 'GET', '/api/v3/admin/platform/scopes');
      expect(r.status).toBe(401);
      expect(r.body.error).toBeUndefined();
      expect(r.headers.get('www-authenticate')).toMatch(/^Bearer/);
    });
    it('when a forged token (signature of another key) is sent, then 401', async () => {
      const admin = await adminToken(app);
      const [h, p] = admin.split('.');
      const forged = `${h}.${p}.${Buffer.alloc(64, 1).toString('base64url')}`;
      expect((await api(app, 'GET', '/api/v3/admin/platform/scopes', forged)).status).toBe(401);
    });
    it('when the token says alg none or HS256, then 401 (RFC 8725 3.1)', async () => {
      const admin = await adminToken(app);
      const [, p, s] = admin.split('.');
      for (const alg of ['none', 'HS256']) {
        const h = Buffer.from(JSON.stringify({ alg, typ: 'at+jwt', kid: 'x' })).toString(
          'base64url',
        );
        expect(
          (
            await api(
              app,
              'GET',
              '/api/v3/admin/platform/scopes',
              `${h}.${p}.${alg === 'none' ? '' : s}`,
            )
          ).status,
        ).toBe(401);
      }
    });
    it('when an expired token is sent, then 401', async () => {
      const { token } = await app.ctx.auth.tokens.issue(
        {
          sub: 'x',
          aud: 'service-admin',
          tenantId: app.platformTenantId,
          permissions: ['admin.platform.scopes.read'],
          client_id: 'c',
          kind: 'user',
        },
        -120,
      );
      expect((await api(app, 'GET', '/api/v3/admin/platform/scopes', token)).status).toBe(401);
    });
    it('when a valid token lacks the permission, then 403 without an error member', async () => {
      const other = await makeTenant(app, ['admin.keys.read']);
      const r = await postForm(app, TOKEN, {
        grant_type: 'password',
        username: other.userEmail,
        password: other.userPassword,
        tenant_id: other.tenantId,
      });
      const res = await api(
        app,
        'GET',
        '/api/v3/admin/platform/scopes',
        r.body.access_token as string,
      );
      expect(res.status).toBe(403);
      expect(res.body.error).toBeUndefined();
      expect(res.body.type).toMatch(/problems\/forbidden$/);
    });
    it('when an APPLICATION token calls an admin endpoint, then 401; when a HUMAN token calls a runtime endpoint, then 401', async () => {
      const app1 = await workloadToken(app, t);
      expect((await api(app, 'GET', '/api/v3/admin/platform/scopes', app1)).status).toBe(401);
      const human = await adminToken(app);
      expect((await api(app, 'GET', '/api/v3/crypto/keys', human)).status).toBe(401);
    });
    it('when the platform admin reads the scopes, then exactly 82 distinct permissions including those of the platform', async () => {
      const r = await api(app, 'GET', '/api/v3/admin/platform/scopes', await adminToken(app));
      expect(r.status).toBe(200);
      const items = r.body.items as string[];
      expect(new Set(items).size).toBe(82);
      expect(items).toEqual(
        expect.arrayContaining([
          'admin.keys.read',
          'admin.keys.rotate',
          'admin.keys.revoke',
          'admin.keys.suspend',
          'admin.keys.archive',
          'admin.keys.orchestrate',
          'admin.policy.effective.read',
          'admin.policy.templates.read',
          'admin.humanuser',
          'admin.platform.scopes.read',
        ]),
      );
      expect(items.some((p) => p.startsWith('admin.cryptographicexchange.'))).toBe(true);
    });
  });

  describe('JWKS and rotation', () => {
    it('when the signing key rotates, then old tokens still verify against the published JWKS and new tokens use the new kid', async () => {
      const before = await adminToken(app);
      const oldKid = JSON.parse(Buffer.from(before.split('.')[0], 'base64url').toString()).kid;
      const rot = await api(app, 'POST', '/api/v3/admin/platform/signing-keys/rotate', before);
      expect(rot.status).toBe(201);
      const after = await adminToken(app);
      const newKid = JSON.parse(Buffer.from(after.split('.')[0], 'base64url').toString()).kid;
      expect(newKid).not.toBe(oldKid);
      const jwks = (await (await fetch(`${app.url}/.well-known/jwks.json`)).json()) as any;
      expect(jwks.keys.map((k: { kid: string }) => k.kid)).toEqual(
        expect.arrayContaining([oldKid, newKid]),
      );
      expect(jwks.keys.every((k: Record<string, unknown>) => k.d === undefined)).toBe(true);
      const set = createRemoteJWKSet(new URL(`${app.url}/.well-known/jwks.json`));
      await expect(compactVerify(before, set)).resolves.toBeTruthy();
      await expect(compactVerify(after, set)).resolves.toBeTruthy();
      expect((await api(app, 'GET', '/api/v3/admin/platform/scopes', before)).status).toBe(200);
    });
    it('when the metadata is fetched, then it names the endpoints and the JWKS', async () => {
      const meta = (await (
        await fetch(`${app.url}/.well-known/oauth-authorization-server`)
      ).json()) as any;
      expect(meta).toMatchObject({
        issuer: app.config.publicBaseUrl,
        jwks_uri: `${app.config.publicBaseUrl}/.well-known/jwks.json`,
        token_endpoint: expect.stringContaining('/api/v3/auth/token'),
      });
    });
  });

  describe('audit of authentication', () => {
    it('when logins succeed and fail, then both are in the tenant audit chain', async () => {
      await workloadToken(app, t);
      await postForm(app, TOKEN, {
        grant_type: 'client_credentials',
        client_id: t.clientId,
        client_secret: crypto.randomUUID(),
      });
      await app.ctx.audit.flush();
      const rows = await app.ctx
        .db('audit_events')
        .where({ tenant_id: t.tenantId, action: 'auth.token.client_credentials' });
      expect(rows.map((r) => r.outcome)).toEqual(expect.arrayContaining(['success', 'failure']));
    });
    it('when secrets pass through, then the log never contains them', async () => {
      await app.ctx.audit.flush();
      const log = app.logText();
      expect(log).not.toContain(t.clientSecret);
      expect(log).not.toContain(t.userPassword);
      const bearer = await adminToken(app);
      await api(app, 'GET', '/api/v3/admin/platform/scopes', `${bearer}x`);
      expect(app.logText()).toContain('the bearer token is invalid');
      expect(app.logText()).not.toContain(bearer.split('.')[2]);
      expect(log).not.toContain(ADMIN_PASSWORD);
    });
  });
});
