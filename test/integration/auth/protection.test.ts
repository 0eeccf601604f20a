import { startTestApp, type TestApp } from '../../../support/app.ts';
import { TEST_ENGINE } from '../../../support/database.ts';
import { makeTenant, postForm, postFormFrom, type TestTenant } from '../../../support/auth.ts';
import { rateKey } from '../../../api/services/auth/rate-limits.ts';
import { lockoutKey } from '../../../api/services/auth/passwords.ts';
import { rotateWorkloadSecret } from '../../../api/services/admin/workloads.ts';
import { sleep } from '../../support/time.ts';

const TOKEN = '/api/v3/auth/token';

describe(`rate limits, lockout and secret rotation (${TEST_ENGINE})`, () => {
  let app: TestApp;
  let t: TestTenant;
  beforeAll(async () => {
    app = await startTestApp({
      RATE_LIMIT_TOKEN_PER_MINUTE: '20',
      RATE_LIMIT_FAILURES_PER_MINUTE: '3',
      LOCKOUT_THRESHOLD: '3',
      LOCKOUT_BASE_SECONDS: '60',
    });
    t = await makeTenant(app, ['crypto.encrypt']);
  });
  afterAll(async () => {
    await app.stop();
  });

  it('when a client keeps sending wrong secrets, then after the failure budget it gets 429 with Retry-After in seconds, even with the right secret', async () => {
    const other = await makeTenant(app, ['crypto.encrypt']);
    for (let i = 0; i < 3; i += 1) {
      expect(
        (
          await postForm(app, TOKEN, {
            grant_type: 'client_credentials',
            client_id: other.clientId,
            client_secret: crypto.randomUUID(),
          })
        ).status,
      ).toBe(400);
    }
    const limited = await postForm(app, TOKEN, {
      grant_type: 'client_credentials',
      client_id: other.clientId,
      client_secret: other.clientSecret,
    });
    expect(limited.status).toBe(429);
    expect(limited.body.error).toBe('too_many_requests');
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  });

  it('when a client exceeds the successful-request budget, then 429 too_many_requests with Retry-After', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 22; i += 1)
      statuses.push(
        (
          await postForm(app, TOKEN, {
            grant_type: 'client_credentials',
            client_id: t.clientId,
            client_secret: t.clientSecret,
          })
        ).status,
      );
    expect(statuses.slice(0, 20).every((s) => s === 200)).toBe(true);
    const last = await postForm(app, TOKEN, {
      grant_type: 'client_credentials',
      client_id: t.clientId,
      client_secret: t.clientSecret,
    });
    expect(last.status).toBe(429);
    expect(last.headers.get('retry-after')).toMatch(/^\d+$/);
  });

  it('when a user fails the password often enough from one address, then that address is locked out with the same answer for a timed while, and the right password from another address still works', async () => {
    const u = await makeTenant(app, ['admin.keys.read']);
    const form = (password: string) => ({
      grant_type: 'password',
      username: u.userEmail,
      password,
      tenant_id: u.tenantId,
    });
    const wrong = await postForm(app, TOKEN, form('not the password'));
    for (let i = 0; i < 2; i += 1) await postForm(app, TOKEN, form('not the password'));
    const user = await app.ctx.db('users').where({ tenant_id: u.tenantId }).first();
    const lock = await app.ctx.auth.limits.lockout.get(lockoutKey(user.id, '127.0.0.1'));
    expect(lock!.msBeforeNext).toBeGreaterThan(50_000);
    expect(lock!.msBeforeNext).toBeLessThanOrEqual(60_000);
    // The failure budget of this rate key is spent too; clear it so the lockout itself answers.
    await app.ctx.auth.limits.failures.delete(
      rateKey('user', u.tenantId, u.userEmail, '127.0.0.1'),
    );
    const locked = await postForm(app, TOKEN, form(u.userPassword));
    expect(locked.status).toBe(400);
    expect(locked.body).toEqual(wrong.body);
    expect((await postFormFrom(app, '127.0.0.2', TOKEN, form(u.userPassword))).status).toBe(200);
    const unknown = await postForm(app, TOKEN, {
      grant_type: 'password',
      username: 'nobody@nowhere.test',
      password: 'x',
      tenant_id: u.tenantId,
    });
    expect(unknown.body).toEqual(wrong.body);
  });

  it('when a workload secret is rotated with a grace period, then both secrets work during it and the old one is refused after it', async () => {
    const w = await makeTenant(app, ['crypto.encrypt']);
    const rotated = await rotateWorkloadSecret(
      app.ctx,
      w.tenantId,
      (await app.ctx.db('workloads').where({ client_id: w.clientId }).first()).id,
      1,
    );
    const login = (secret: string) =>
      postForm(app, TOKEN, {
        grant_type: 'client_credentials',
        client_id: w.clientId,
        client_secret: secret,
      });
    expect((await login(w.clientSecret)).status).toBe(200);
    expect((await login(rotated.clientSecret)).status).toBe(200);
    await sleep(1200);
    expect((await login(w.clientSecret)).status).toBe(400);
    expect((await login(rotated.clientSecret)).status).toBe(200);
  });

  it('when secrets are stored, then only keyed hashes are in the database', async () => {
    const rows = await app.ctx.db('workload_secrets');
    expect(rows.every((r) => /^[0-9a-f]{64}$/.test(r.secret_hash))).toBe(true);
    expect(JSON.stringify(rows)).not.toContain(t.clientSecret);
  });
});
