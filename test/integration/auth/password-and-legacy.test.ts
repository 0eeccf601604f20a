import { jwtVerify, createRemoteJWKSet } from 'jose';
import { startTestApp, type TestApp } from '../../../support/app.ts';
import { TEST_ENGINE } from '../../../support/database.ts';
import { makeTenant, postForm, type TestTenant } from '../../../support/auth.ts';

describe(`forgot-password and legacy login (${TEST_ENGINE})`, () => {
  let app: TestApp;
  let t: TestTenant;
  beforeAll(async () => {
    app = await startTestApp();
    t = await makeTenant(app, ['crypto.encrypt', 'crypto.decrypt', 'crypto.keys.read']);
  });
  afterAll(async () => {
    await app.stop();
  });

  it('when a reset is requested for known and unknown addresses, then both answer the same 202 and only the known one gets mail', async () => {
    const known = await postForm(app, '/api/v3/auth/password/forgot', {
      email: t.userEmail,
      tenant_id: t.tenantId,
    });
    const unknown = await postForm(app, '/api/v3/auth/password/forgot', {
      email: 'ghost@nowhere.test',
      tenant_id: t.tenantId,
    });
    expect(known.status).toBe(202);
    expect(unknown.status).toBe(202);
    expect(unknown.body).toEqual(known.body);
    await app.ctx.background.idle(); // the mail goes out after the answer
    const outbox = await app.ctx.db('outbox');
    expect(outbox.map((m) => m.recipient)).toEqual([t.userEmail]);
  });

  it('when the mailed token is used, then the new password works once, the old one does not, and the token cannot be reused', async () => {
    const mail = await app.ctx
      .db('outbox')
      .where({ recipient: t.userEmail })
      .orderBy('id', 'desc')
      .first();
    const token = /token=([\w-]+)/.exec(mail.body)![1];
    expect(app.logText()).not.toContain(token);
    const done = await postForm(app, '/api/v3/auth/password/reset', {
      token,
      password: 'a brand new passphrase',
    });
    expect(done.status).toBe(200);
    const login = (password: string) =>
      postForm(app, '/api/v3/auth/token', {
        grant_type: 'password',
        username: t.userEmail,
        password,
        tenant_id: t.tenantId,
      });
    expect((await login('a brand new passphrase')).status).toBe(200);
    expect((await login(t.userPassword)).status).toBe(400);
    const again = await postForm(app, '/api/v3/auth/password/reset', {
      token,
      password: 'yet another passphrase',
    });
    expect(again.status).toBe(400);
    expect(again.body.error).toBe('invalid_request');
  });

  it('when an expired reset token is used, then it is refused', async () => {
    await postForm(app, '/api/v3/auth/password/forgot', {
      email: t.userEmail,
      tenant_id: t.tenantId,
    });
    await app.ctx.background.idle();
    const mail = await app.ctx
      .db('outbox')
      .where({ recipient: t.userEmail })
      .orderBy('id', 'desc')
      .first();
    const token = /token=([\w-]+)/.exec(mail.body)![1];
    await app.ctx.db('password_resets').update({ expires_at: new Date(Date.now() - 1000) });
    expect(
      (
        await postForm(app, '/api/v3/auth/password/reset', {
          token,
          password: 'whatever passphrase',
        })
      ).status,
    ).toBe(400);
  });

  it('when the legacy JSON login is used, then an access token with the legacy role names in scopes and a refresh token', async () => {
    const res = await fetch(`${app.url}/api/authenticate/app`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ clientId: t.clientId, clientSecret: t.clientSecret }),
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as any;
    expect(body).toMatchObject({
      accessToken: expect.any(String),
      refreshToken: expect.stringMatching(/^rt_/),
    });
    const { payload } = await jwtVerify(
      body.accessToken,
      createRemoteJWKSet(new URL(`${app.url}/.well-known/jwks.json`)),
    );
    expect(payload.scopes).toEqual(
      expect.arrayContaining(['secure.encrypt', 'secure.decrypt', 'key_management.listKeys']),
    );
    expect(payload.scopes).not.toContain('secure.sign');
    const refreshed = await fetch(`${app.url}/api/authenticate/refresh`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ refreshToken: body.refreshToken }),
    });
    expect(refreshed.status).toBe(200);
  });

  it('when the legacy login has a wrong secret or an unknown client, then 400 invalid_grant or 401 invalid_client', async () => {
    const post = (b: unknown) =>
      fetch(`${app.url}/api/authenticate/app`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(b),
      });
    expect((await post({ clientId: t.clientId, clientSecret: crypto.randomUUID() })).status).toBe(
      400,
    );
    expect(
      (await post({ clientId: crypto.randomUUID(), clientSecret: crypto.randomUUID() })).status,
    ).toBe(401);
    expect((await post({ clientId: 1 })).status).toBe(400);
  });
});
