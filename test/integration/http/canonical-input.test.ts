/**
 * Regression tests of the hardening issue, items 2, 4, 8 (policy part) and 11: identifiers are
 * canonical where a request enters, text no column can hold is refused there, and a request
 * value never finds Object.prototype's members.
 */
import { generateKeyPairSync } from 'node:crypto';
import { startTestApp, type TestApp } from '../../../support/app.ts';
import { TEST_ENGINE } from '../../../support/database.ts';
import {
  adminToken,
  api,
  makeTenant,
  postForm,
  workloadToken,
  type TestTenant,
} from '../../../support/auth.ts';
import { brokenAuditChains } from './audit-chains.ts';

const PERMS = [
  'crypto.encrypt',
  'crypto.decrypt',
  'crypto.sign',
  'crypto.verify',
  'admin.keys.import',
  'admin.keys.create',
  'admin.roles.create',
  'admin.workloads.create',
  'admin.policy.overrides.write',
  'admin.policy.effective.read',
];
const NUL = 'a\u0000b';
const LONE_SURROGATE = 'a\ud800b';

describe(`canonical identifiers and unfit text at the entry (${TEST_ENGINE})`, () => {
  let app: TestApp;
  let t: TestTenant;
  let admin: string;
  let core: string;
  let upper: string;
  beforeAll(async () => {
    app = await startTestApp();
    t = await makeTenant(app, PERMS);
    admin = await adminToken(app);
    core = await workloadToken(app, t);
    upper = `/api/v3/admin/tenants/${t.tenantId.toUpperCase()}`;
  });
  afterAll(async () => {
    await app.stop();
  });

  it('when a failed password grant names the tenant in upper case, then the event is stored under the canonical id and the audit chain still verifies', async () => {
    const r = await postForm(app, '/api/v3/auth/token', {
      grant_type: 'password',
      username: t.userEmail,
      password: 'wrong password!',
      tenant_id: t.tenantId.toUpperCase(),
    });
    expect(r.status).toBe(400);
    expect(r.body.error).toBe('invalid_grant');
    await app.ctx.audit.flush();
    const failures = await app.ctx
      .db('audit_events')
      .where({ tenant_id: t.tenantId, action: 'auth.token.password', outcome: 'failure' })
      .select('seq');
    expect(failures).toHaveLength(1);
    expect(await brokenAuditChains(app)).toEqual([]);
  });

  it('when a platform admin creates and rotates a key through an upper-case tenant path, then the key still encrypts and decrypts, old ciphertexts included', async () => {
    expect(
      (await api(app, 'POST', `${upper}/keys`, admin, { type: 'aes-256', kid: 'upper-path' }))
        .status,
    ).toBe(201);
    const v1 = await api(app, 'POST', '/api/v3/crypto/encrypt', core, {
      kid: 'upper-path',
      data: 'AAEC',
    });
    expect(v1.status).toBe(200);
    expect((await api(app, 'POST', `${upper}/keys/upper-path/rotate`, admin)).body).toMatchObject({
      currentVersion: 2,
    });
    expect(
      (
        await api(app, 'POST', `${upper}/keys/orchestrate`, admin, {
          operation: 'rotate',
          kids: ['upper-path'],
        })
      ).body,
    ).toMatchObject({ succeeded: 1 });
    const v3 = await api(app, 'POST', '/api/v3/crypto/encrypt', core, {
      kid: 'upper-path',
      data: 'AAEC',
    });
    expect(v3.body).toMatchObject({ version: 3 });
    for (const ciphertext of [v1.body.ciphertext, v3.body.ciphertext]) {
      const dec = await api(app, 'POST', '/api/v3/crypto/decrypt', core, { ciphertext });
      expect(dec.status).toBe(200);
      expect(dec.body.data).toBe('AAEC');
    }
    await app.ctx.audit.flush();
    const events = await app.ctx
      .db('audit_events')
      .where({ tenant_id: t.tenantId, action: 'key.create' })
      .select('target');
    expect(events.map((e) => e.target)).toContain('upper-path');
    expect(await brokenAuditChains(app)).toEqual([]);
  });

  it('when a platform admin imports a keystore through an upper-case tenant path, then the imported key signs and verifies', async () => {
    const pem = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({
      type: 'pkcs8',
      format: 'pem',
    });
    const form = new FormData();
    form.append('keystore', new Blob([pem]), 'key.pem');
    form.append('kid', 'upper-import');
    const res = await fetch(`${app.url}${upper}/keys/import-keystore`, {
      method: 'POST',
      headers: { authorization: `Bearer ${admin}` },
      body: form,
    });
    expect(res.status).toBe(201);
    const signed = await api(app, 'POST', '/api/v3/crypto/sign', core, {
      kid: 'upper-import',
      data: 'AAEC',
    });
    expect(signed.status).toBe(200);
    expect(
      (
        await api(app, 'POST', '/api/v3/crypto/verify', core, {
          kid: 'upper-import',
          data: 'AAEC',
          signature: signed.body.signature,
        })
      ).body,
    ).toMatchObject({ valid: true });
  });

  it('when a keystore is imported with a kid shaped like an upper-case UUID (a multipart field), then the kid is stored canonical and the key can be named again (it was stored as sent and every lookup missed it)', async () => {
    const pem = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({
      type: 'pkcs8',
      format: 'pem',
    });
    const kid = 'ABCDEF01-2345-6789-ABCD-EF0123456789';
    const form = new FormData();
    form.append('keystore', new Blob([pem]), 'key.pem');
    form.append('kid', kid);
    const res = await fetch(`${app.url}${upper}/keys/import-keystore`, {
      method: 'POST',
      headers: { authorization: `Bearer ${admin}` },
      body: form,
    });
    expect(res.status).toBe(201);
    expect((await api(app, 'GET', `${upper}/keys/${kid}`, admin)).status).toBe(200);
    expect(
      (await api(app, 'POST', '/api/v3/crypto/sign', core, { kid, data: 'AAEC' })).status,
    ).toBe(200);
  });

  it('when a policy override names the template "constructor", then 400 and key creation still works', async () => {
    for (const template of ['constructor', '__proto__', 'toString']) {
      const r = await api(app, 'PUT', `${upper}/policies/overrides`, admin, { template });
      expect(r.status).toBe(400);
      expect(r.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    }
    expect(
      (
        await api(app, 'POST', `${upper}/keys`, admin, {
          type: 'aes-128',
          kid: 'after-constructor',
        })
      ).status,
    ).toBe(201);
  });

  it('when a tenant\'s stored overrides already name "constructor", then its policy reads as the default template instead of 500', async () => {
    await app.ctx
      .db('tenants')
      .where({ id: t.tenantId })
      .update({ policy_overrides: JSON.stringify({ template: 'constructor' }) });
    const r = await api(app, 'GET', `${upper}/policies/effective`, admin);
    expect(r.status).toBe(200);
    expect(r.body.policy).toMatchObject({ template: 'default' });
    expect(
      (await api(app, 'POST', `${upper}/keys`, admin, { type: 'aes-128', kid: 'healed' })).status,
    ).toBe(201);
    await app.ctx
      .db('tenants')
      .where({ id: t.tenantId })
      .update({ policy_overrides: JSON.stringify({}) });
  });

  // A form cannot carry a lone surrogate (its UTF-8 decoding yields U+FFFD), so NUL is the case here.
  it('when a username or a forgot-password address holds NUL, then 400 invalid_request in the OAuth shape', async () => {
    const grant = await postForm(app, '/api/v3/auth/token', {
      grant_type: 'password',
      username: NUL,
      password: 'x',
      tenant_id: t.tenantId,
    });
    expect([grant.status, grant.body.error]).toEqual([400, 'invalid_request']);
    const forgot = await postForm(app, '/api/v3/auth/password/forgot', {
      email: NUL,
      tenant_id: t.tenantId,
    });
    expect([forgot.status, forgot.body.error]).toEqual([400, 'invalid_request']);
  });

  it('when the token path is spelled in upper case and a query value holds NUL, then the refusal still has the OAuth shape (Express matches the path case-insensitively)', async () => {
    const res = await fetch(`${app.url}/API/V3/AUTH/token?x=%00`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=client_credentials',
    });
    const body = (await res.json()) as { error?: string };
    expect([res.status, body.error]).toEqual([400, 'invalid_request']);
  });

  it('when a role, workload, tenant name or orchestrate kid holds NUL or a lone surrogate, then 400 problem naming the field', async () => {
    const cases: Array<[string, string, (bad: string) => unknown, string]> = [
      ['POST', `${upper}/roles`, (bad) => ({ name: bad, permissions: [] }), 'body.name'],
      ['POST', `${upper}/workloads`, (bad) => ({ name: bad, roleId: t.roleId }), 'body.name'],
      ['POST', '/api/v3/admin/platform/tenants', (bad) => ({ name: bad }), 'body.name'],
      [
        'POST',
        `${upper}/keys/orchestrate`,
        (bad) => ({ operation: 'suspend', kids: [bad] }),
        'body.kids[0]',
      ],
      ['POST', '/api/v3/crypto/encrypt', (bad) => ({ kid: bad, data: 'AAEC' }), 'body.kid'],
    ];
    for (const [method, path, body, field] of cases) {
      for (const bad of [NUL, LONE_SURROGATE]) {
        const r = await api(
          app,
          method,
          path,
          path.startsWith('/api/v3/crypto') ? core : admin,
          body(bad),
        );
        expect([path, r.status, r.body.field]).toEqual([path, 400, field]);
        expect(r.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      }
    }
  });

  it('when a path segment decodes to NUL, then 400 problem instead of reaching the database', async () => {
    const r = await api(app, 'GET', `${upper}/keys/a%00b`, admin);
    expect(r.status).toBe(400);
    expect(r.body.field).toBe('path');
  });

  it('when a password looks like an upper-case UUID, then it reaches the hash as typed', async () => {
    const r = await postForm(app, '/api/v3/auth/token', {
      grant_type: 'password',
      username: t.userEmail,
      password: t.userPassword.toUpperCase(),
      tenant_id: t.tenantId,
    });
    expect(r.status).toBe(400);
  });
});
