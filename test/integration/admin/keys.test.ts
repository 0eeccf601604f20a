import { startTestApp, type TestApp } from '../../support/app.ts';
import { TEST_ENGINE } from '../../support/database.ts';
import { api, makeTenant, userToken, type TestTenant } from '../../support/auth.ts';

const KEY_PERMS = ['admin.keys.read', 'admin.keys.create', 'admin.keys.rotate', 'admin.keys.suspend', 'admin.keys.revoke', 'admin.keys.archive', 'admin.keys.orchestrate', 'admin.keys.import'];

describe(`admin keys (${TEST_ENGINE})`, () => {
  let app: TestApp;
  let t: TestTenant;
  let token: string;
  let base: string;
  beforeAll(async () => {
    app = await startTestApp();
    t = await makeTenant(app, KEY_PERMS);
    token = await userToken(app, t);
    base = `/api/v3/admin/tenants/${t.tenantId}/keys`;
  });
  afterAll(async () => {
    await app.stop();
  });

  it('when keys of every classical type are created, then 201 with metadata and a public JWK but never private material', async () => {
    for (const type of ['aes-256', 'rsa-2048', 'ec-p256', 'ed25519', 'ml-kem-768', 'ml-dsa-65']) {
      const r = await api(app, 'POST', base, token, { type, kid: `k-${type}` });
      expect(r.status).toBe(201);
      expect(r.body).toMatchObject({ kid: `k-${type}`, type, state: 'active', currentVersion: 1 });
      const text = JSON.stringify(r.body);
      expect(text).not.toMatch(/"d"|"k"|privateKey|secret/);
    }
  });

  it('when a kid is reused, then 409; when the type is unknown, then 400', async () => {
    expect((await api(app, 'POST', base, token, { type: 'aes-256', kid: 'k-aes-256' })).status).toBe(409);
    expect((await api(app, 'POST', base, token, { type: 'des' })).status).toBe(400);
  });

  it('when a key goes through its lifecycle, then the transition table of contract 3 holds', async () => {
    await api(app, 'POST', base, token, { type: 'aes-128', kid: 'life' });
    expect((await api(app, 'POST', `${base}/life/rotate`, token)).body).toMatchObject({ currentVersion: 2, state: 'active' });
    expect((await api(app, 'POST', `${base}/life/archive`, token)).status).toBe(409);
    expect((await api(app, 'POST', `${base}/life/suspend`, token)).body.state).toBe('suspended');
    expect((await api(app, 'POST', `${base}/life/rotate`, token)).status).toBe(409);
    expect((await api(app, 'POST', `${base}/life/resume`, token)).body.state).toBe('active');
    expect((await api(app, 'POST', `${base}/life/revoke`, token)).body.state).toBe('revoked');
    expect((await api(app, 'POST', `${base}/life/resume`, token)).status).toBe(409);
    expect((await api(app, 'POST', `${base}/life/archive`, token)).body.state).toBe('archived');
    const list = await api(app, 'GET', base, token);
    expect((list.body.items as Array<{ kid: string }>).some((k) => k.kid === 'life')).toBe(false);
    const archived = await api(app, 'GET', `${base}?state=archived`, token);
    expect((archived.body.items as Array<{ kid: string }>).map((k) => k.kid)).toEqual(['life']);
  });
});
