/**
 * The auth endpoints' regressions of the hardening issue: prototype lookups of grant_type, the
 * OAuth shape of every /api/v3/auth answer, budgets keyed on the canonical identity, password
 * hashing that callers without credentials can start, the per-address lockout, and /metrics.
 * Budgets keyed on an address use a loopback address of their own per test (127.0.0.x).
 */
import { startTestApp, type TestApp } from '../../../support/app.ts';
import { TEST_ENGINE } from '../../../support/database.ts';
import {
  adminToken,
  api,
  makeTenant,
  postForm,
  postFormFrom,
  userToken,
  workloadToken,
  type TestTenant,
} from '../../../support/auth.ts';
import { GRANTS } from '../../../api/services/auth/grants/index.ts';
import { createRole } from '../../../api/services/admin/roles.ts';
import { registerWorkload } from '../../../api/services/admin/workloads.ts';
import {
  FORGOT_PER_ADDRESS_PER_MINUTE,
  MAX_LOCKOUT_SECONDS,
  RESET_MAILS_PER_HOUR,
  recordWrongPassword,
} from '../../../api/services/auth/rate-limits.ts';
import { lockoutKey } from '../../../api/services/auth/passwords.ts';

const TOKEN = '/api/v3/auth/token';
const RESET = '/api/v3/auth/password/reset';
const FORGOT = '/api/v3/auth/password/forgot';
const EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';

describe(`auth endpoint hardening (${TEST_ENGINE})`, () => {
  let app: TestApp;
  let t: TestTenant;
  /** Names of the pool tasks run since the last reset of the list. */
  let tasks: string[];
  beforeAll(async () => {
    app = await startTestApp({
      RATE_LIMIT_FAILURES_PER_MINUTE: '3',
      LOCKOUT_THRESHOLD: '3',
      LOCKOUT_BASE_SECONDS: '600',
      AUTH_HASH_CONCURRENCY: '1',
    });
    t = await makeTenant(app, ['crypto.encrypt', 'auth.token-exchange']);
    const run = app.ctx.pool.run.bind(app.ctx.pool);
    app.ctx.pool.run = ((task: string, input: unknown, transfer?: never) => {
      tasks.push(task);
      return run(task, input, transfer);
    }) as typeof app.ctx.pool.run;
  }, 60_000);
  beforeEach(() => {
    tasks = [];
  });
  afterAll(async () => {
    await app.stop();
  });

  const legacyLogin = async (clientId: string, clientSecret: string) => {
    const res = await fetch(`${app.url}/api/authenticate/app`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ clientId, clientSecret }),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  const mailedResetToken = async (who: TestTenant) => {
    expect(
      (
        await postForm(app, '/api/v3/auth/password/forgot', {
          email: who.userEmail,
          tenant_id: who.tenantId,
        })
      ).status,
    ).toBe(202);
    await app.ctx.background.idle(); // the mail goes out after the answer
    const mail = await app.ctx
      .db('outbox')
      .where({ recipient: who.userEmail })
      .orderBy('id', 'desc')
      .first();
    return /token=([\w-]+)/.exec(mail.body)![1];
  };

  describe('prototype lookups and the OAuth shape', () => {
    it('when grant_type names an Object.prototype member, then 400 unsupported_grant_type (constructor answered 500 with the application context, toString 200)', async () => {
      for (const grantType of [
        'constructor',
        '__proto__',
        'hasOwnProperty',
        'valueOf',
        'toString',
      ]) {
        const r = await postForm(app, TOKEN, { grant_type: grantType });
        expect([grantType, r.status, r.body.error]).toEqual([
          grantType,
          400,
          'unsupported_grant_type',
        ]);
      }
    });

    it('when an auth path does not exist or the method is wrong, then 404 and 405 in the OAuth shape', async () => {
      const missing = await postForm(app, '/api/v3/auth/nothing-here', {});
      expect(missing.status).toBe(404);
      expect(missing.body).toEqual({ error: 'not_found', error_description: expect.any(String) });
      const wrongMethod = await fetch(`${app.url}${TOKEN}`);
      expect(wrongMethod.status).toBe(405);
      expect(wrongMethod.headers.get('allow')).toBe('POST');
      expect(await wrongMethod.json()).toEqual({
        error: 'method_not_allowed',
        error_description: expect.any(String),
      });
    });

    it('when an auth handler fails unexpectedly, then 500 server_error in the OAuth shape, the cause only in the log', async () => {
      const verifyFresh = app.ctx.auth.tokens.verifyFresh;
      app.ctx.auth.tokens.verifyFresh = async () => {
        throw new Error('the signing key store exploded');
      };
      try {
        const r = await postForm(
          app,
          '/api/v3/auth/token/introspect',
          { token: 'x' },
          { authorization: 'Bearer y' },
        );
        expect(r.status).toBe(500);
        expect(r.body).toEqual({ error: 'server_error', error_description: expect.any(String) });
        expect(JSON.stringify(r.body)).not.toContain('exploded');
        expect(app.logText()).toContain('the signing key store exploded');
      } finally {
        app.ctx.auth.tokens.verifyFresh = verifyFresh;
      }
    });
  });

  describe('budgets on the canonical identity', () => {
    it('when the client_id changes case between wrong secrets, then it is one client and its failure budget runs out (429)', async () => {
      const w = await makeTenant(app, ['crypto.encrypt']);
      const spellings = [
        w.clientId.toUpperCase(),
        w.clientId,
        `${w.clientId.slice(0, 8).toUpperCase()}${w.clientId.slice(8)}`,
      ];
      for (const clientId of spellings) {
        expect(
          (
            await postForm(app, TOKEN, {
              grant_type: 'client_credentials',
              client_id: clientId,
              client_secret: crypto.randomUUID(),
            })
          ).status,
        ).toBe(400);
      }
      const limited = await postForm(app, TOKEN, {
        grant_type: 'client_credentials',
        client_id: w.clientId.toUpperCase(),
        client_secret: w.clientSecret,
      });
      expect(limited.status).toBe(429);
    });

    it('when the legacy login gets wrong secrets, then it spends the same budget as client_credentials and answers 429 (it had no limit)', async () => {
      const w = await makeTenant(app, ['crypto.encrypt']);
      for (let i = 0; i < 3; i += 1)
        expect((await legacyLogin(w.clientId, crypto.randomUUID())).status).toBe(400);
      const legacy = await legacyLogin(w.clientId, w.clientSecret);
      expect(legacy.status).toBe(429);
      expect(legacy.body.error).toBe('too_many_requests');
      expect(
        (
          await postForm(app, TOKEN, {
            grant_type: 'client_credentials',
            client_id: w.clientId,
            client_secret: w.clientSecret,
          })
        ).status,
      ).toBe(429);
    });

    it('when garbage refresh tokens come from an address, then they run out of budget there, but a real refresh token from the same address still works', async () => {
      const from = '127.0.0.3';
      const u = await makeTenant(app, ['admin.keys.read']);
      const login = await postFormFrom(app, from, TOKEN, {
        grant_type: 'password',
        username: u.userEmail,
        password: u.userPassword,
        tenant_id: u.tenantId,
      });
      const statuses: number[] = [];
      for (let i = 0; i < 5; i += 1)
        statuses.push(
          (
            await postFormFrom(app, from, TOKEN, {
              grant_type: 'refresh_token',
              refresh_token: `rt_${crypto.randomUUID()}`,
            })
          ).status,
        );
      expect(statuses).toEqual([400, 400, 400, 429, 429]);
      const refreshed = await postFormFrom(app, from, TOKEN, {
        grant_type: 'refresh_token',
        refresh_token: login.body.refresh_token as string,
      });
      expect(refreshed.status).toBe(200);
    });

    it('when failed refresh and exchange requests carry a fresh client_id each, then they still run out of budget (429)', async () => {
      const from = '127.0.0.4';
      const refresh: number[] = [];
      const exchange: number[] = [];
      for (let i = 0; i < 5; i += 1) {
        refresh.push(
          (
            await postFormFrom(app, from, TOKEN, {
              grant_type: 'refresh_token',
              refresh_token: `rt_${crypto.randomUUID()}`,
              client_id: crypto.randomUUID(),
            })
          ).status,
        );
      }
      const from2 = '127.0.0.5';
      for (let i = 0; i < 5; i += 1) {
        exchange.push(
          (
            await postFormFrom(app, from2, TOKEN, {
              grant_type: EXCHANGE,
              subject_token: 'not.a.token',
              resource: `urn:keyward:tenant:${t.tenantId}:core`,
              client_id: crypto.randomUUID(),
            })
          ).status,
        );
      }
      expect(refresh.slice(3)).toEqual([429, 429]);
      expect(exchange.slice(3)).toEqual([429, 429]);
    });

    it('when a client-supplied id is 16 KiB, then the rate-limit key stays short (a key kept 16 KiB for 60 s)', async () => {
      const huge = 'x'.repeat(16 * 1024);
      const forms = [
        ['client_credentials', { client_id: huge }],
        ['password', { tenant_id: huge, username: huge }],
        ['refresh_token', { refresh_token: huge }],
        [EXCHANGE, { subject_token: huge }],
      ] as const;
      for (const [grantType, form] of forms) {
        const key = await GRANTS.get(grantType)!.rateKey(
          app.ctx,
          { grant_type: grantType, ...form },
          '127.0.0.1',
        );
        expect(key.length).toBeLessThanOrEqual(48);
      }
    });
  });

  describe('unauthenticated CPU work and lockout', () => {
    it('when a password reset carries a made-up token, then it is refused without hashing the new password', async () => {
      const r = await postFormFrom(app, '127.0.0.6', RESET, {
        token: 'made-up',
        password: 'a long enough new password',
      });
      expect(r.status).toBe(400);
      expect(r.body.error).toBe('invalid_request');
      expect(tasks).not.toContain('hashPassword');
    });

    it('when made-up reset tokens flood in from an address, then after the failure budget they get 429 (reset had no limit)', async () => {
      const statuses: number[] = [];
      for (let i = 0; i < 5; i += 1)
        statuses.push(
          (
            await postFormFrom(app, '127.0.0.7', RESET, {
              token: crypto.randomUUID(),
              password: 'a long enough new password',
            })
          ).status,
        );
      expect(statuses).toEqual([400, 400, 400, 429, 429]);
    });

    it('when forgot-password is asked for one account again and again, then every answer is the same 202 and at most a few reset mails go out (it was a mail flood)', async () => {
      const u = await makeTenant(app, ['admin.keys.read']);
      const mails = async () =>
        Number(
          (await app.ctx.db('outbox').where('recipient', u.userEmail).count({ n: '*' }).first())!.n,
        );
      const statuses: number[] = [];
      for (let i = 0; i < 6; i += 1)
        statuses.push(
          (
            await postFormFrom(app, `127.0.1.${i + 1}`, FORGOT, {
              email: u.userEmail,
              tenant_id: u.tenantId,
            })
          ).status,
        );
      expect(statuses).toEqual([202, 202, 202, 202, 202, 202]);
      await app.ctx.background.idle();
      expect(await mails()).toBe(RESET_MAILS_PER_HOUR);
    });

    it('when one address floods forgot-password, then it gets 429 with Retry-After beyond its budget', async () => {
      const statuses: number[] = [];
      for (let i = 0; i < FORGOT_PER_ADDRESS_PER_MINUTE + 2; i += 1) {
        statuses.push(
          (
            await postFormFrom(app, '127.0.2.1', FORGOT, {
              email: `nobody-${i}@example.test`,
              tenant_id: t.tenantId,
            })
          ).status,
        );
      }
      expect(statuses.slice(0, FORGOT_PER_ADDRESS_PER_MINUTE).every((s) => s === 202)).toBe(true);
      expect(statuses.slice(FORGOT_PER_ADDRESS_PER_MINUTE)).toEqual([429, 429]);
    });

    it('when an unknown username logs in, then it costs no hash and answers like a wrong password', async () => {
      const unknown = await postFormFrom(app, '127.0.0.8', TOKEN, {
        grant_type: 'password',
        username: 'ghost@nowhere.test',
        password: 'whatever it is',
        tenant_id: t.tenantId,
      });
      expect(tasks).not.toContain('verifyPassword');
      const wrong = await postFormFrom(app, '127.0.0.8', TOKEN, {
        grant_type: 'password',
        username: t.userEmail,
        password: 'not the password',
        tenant_id: t.tenantId,
      });
      expect(tasks).toContain('verifyPassword');
      expect(unknown).toEqual(wrong);
    });

    it('when the unauthenticated hashing budget is full, then a reset answers 503 temporarily_unavailable at once while a legitimate login still succeeds', async () => {
      const u = await makeTenant(app, ['admin.keys.read']);
      const token = await mailedResetToken(u);
      // AUTH_HASH_CONCURRENCY=1: one hash running and one waiting fill it.
      let release!: () => void;
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      const holders = [
        app.ctx.auth.hashBudget.run(() => held),
        app.ctx.auth.hashBudget.run(() => held),
      ];
      try {
        const started = performance.now();
        const busy = await Promise.all(
          Array.from({ length: 3 }, () =>
            postForm(app, RESET, { token, password: 'a brand new passphrase' }),
          ),
        );
        expect(busy.map((r) => [r.status, r.body.error])).toEqual(
          Array(3).fill([503, 'temporarily_unavailable']),
        );
        expect(performance.now() - started).toBeLessThan(5_000);
        expect(
          (
            await postForm(app, TOKEN, {
              grant_type: 'password',
              username: u.userEmail,
              password: u.userPassword,
              tenant_id: u.tenantId,
            })
          ).status,
        ).toBe(200);
      } finally {
        release();
        await Promise.all(holders);
      }
      expect(
        (await postForm(app, RESET, { token, password: 'a brand new passphrase' })).status,
      ).toBe(200);
    });

    it('when someone at another address fails the password until locked, then the owner still logs in from their own address', async () => {
      const u = await makeTenant(app, ['admin.keys.read']);
      for (let i = 0; i < 4; i += 1)
        await postFormFrom(app, '127.0.0.9', TOKEN, {
          grant_type: 'password',
          username: u.userEmail,
          password: 'guessing',
          tenant_id: u.tenantId,
        });
      expect(
        (
          await postFormFrom(app, '127.0.0.9', TOKEN, {
            grant_type: 'password',
            username: u.userEmail,
            password: u.userPassword,
            tenant_id: u.tenantId,
          })
        ).status,
      ).toBe(429);
      expect((await userToken(app, u)).length).toBeGreaterThan(0);
    });

    it('when an address is locked out again and again, then no lock lasts longer than 15 minutes (it doubled to about 17 hours)', async () => {
      const key = lockoutKey(crypto.randomUUID(), '127.0.0.10');
      const limits = app.ctx.auth.limits;
      for (let round = 0; round < 4; round += 1) {
        for (let i = 0; i < 3; i += 1) await recordWrongPassword(limits, key, 600);
        const lock = await limits.lockout.get(key);
        expect(lock!.msBeforeNext).toBeGreaterThan(0);
        expect(lock!.msBeforeNext).toBeLessThanOrEqual(MAX_LOCKOUT_SECONDS * 1000);
        await limits.lockout.delete(key); // as if the lock had run out
      }
      expect((await limits.lockouts.get(key))!.consumedPoints).toBe(4);
    });
  });

  describe('/metrics', () => {
    it('when /metrics is scraped without a bearer or without admin.platform.metrics.read, then 401 and 403; with it, 200', async () => {
      expect((await fetch(`${app.url}/metrics`)).status).toBe(401);
      expect((await api(app, 'GET', '/metrics', await workloadToken(app, t))).status).toBe(403);
      // The scraper: a platform workload whose role holds only the metrics permission.
      const role = await createRole(app.ctx, app.platformTenantId, {
        name: 'metrics-scraper',
        permissions: ['admin.platform.metrics.read'],
      });
      const scraper = await registerWorkload(app.ctx, app.platformTenantId, {
        name: 'prometheus',
        roleId: role.id,
      });
      const ok = await fetch(`${app.url}/metrics`, {
        headers: { authorization: `Bearer ${await workloadToken(app, scraper)}` },
      });
      expect(ok.status).toBe(200);
      expect(await ok.text()).toContain('keyward_http_requests_total');
    });

    it('when tenant-scoped routes were called, then the route labels are templates and the scrape names no tenant', async () => {
      const admin = await adminToken(app);
      expect(
        (await api(app, 'GET', `/api/v3/admin/tenants/${t.tenantId}/keys`, admin)).status,
      ).toBe(200);
      expect(
        (await api(app, 'GET', `/api/v3/admin/tenants/${t.tenantId}/roles/${t.roleId}`, admin))
          .status,
      ).toBe(200);
      const text = await (
        await fetch(`${app.url}/metrics`, { headers: { authorization: `Bearer ${admin}` } })
      ).text();
      expect(text).toContain('route="/api/v3/admin/tenants/:tenantId/keys"');
      expect(text).toContain('route="/api/v3/admin/tenants/:tenantId/roles/:id"');
      expect(text).not.toContain(t.tenantId);
      expect(text).not.toMatch(/route="[^"]*[0-9a-f]{8}-[0-9a-f]{4}-/);
    });
  });
});
