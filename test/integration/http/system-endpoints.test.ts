import type { Knex } from 'knex';
import { startTestApp, ADMIN_PASSWORD, type TestApp } from '../../../support/app.ts';
import { TEST_ENGINE } from '../../../support/database.ts';
import { adminToken } from '../../../support/auth.ts';

describe(`system endpoints and the platform bootstrap (${TEST_ENGINE})`, () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(async () => {
    await app.stop();
  });

  it('when /healthz is called, then it answers 200', async () => {
    const res = await fetch(`${app.url}/healthz`);
    expect(res.status).toBe(200);
    expect((await res.json()) as any).toEqual({ status: 'ok' });
  });

  it('when /readyz is called with the database up, then every check is true', async () => {
    const res = await fetch(`${app.url}/readyz`);
    expect(res.status).toBe(200);
    expect(((await res.json()) as any).checks).toEqual({ database: true, pool: true });
  });

  it('when a dependency is down, then /readyz answers 503 with its checks, which fit the documented answer', async () => {
    const open = app.ctx.pool.open;
    app.ctx.pool.open = () => false;
    try {
      const res = await fetch(`${app.url}/readyz`);
      expect(res.status).toBe(503);
      expect((await res.json()) as any).toEqual({
        status: 'not-ready',
        checks: { database: true, pool: false },
      });
    } finally {
      app.ctx.pool.open = open;
    }
  });

  it("when the database answers but cannot find the service's tables (search_path emptied), then /readyz answers 503 with database false", async () => {
    // One connection of its own, so the broken session is the one /readyz queries on either engine.
    const { default: knexFactory } = await import('knex');
    const broken = knexFactory({
      client: 'pg',
      connection: (app.ctx.db.client as { config: Knex.Config }).config.connection,
      pool: { min: 1, max: 1 },
    });
    const db = app.ctx.db;
    try {
      await broken.raw("select pg_catalog.set_config('search_path', '', false)");
      (app.ctx as { db: unknown }).db = broken;
      const res = await fetch(`${app.url}/readyz`);
      expect([res.status, ((await res.json()) as any).checks]).toEqual([
        503,
        { database: false, pool: true },
      ]);
    } finally {
      (app.ctx as { db: unknown }).db = db;
      await broken.raw("select pg_catalog.set_config('search_path', '\"$user\", public', false)");
      await broken.destroy();
    }
  });

  it('when /healthz and /console are asked with HEAD, then 200 without a body', async () => {
    for (const path of ['/healthz', '/console']) {
      const res = await fetch(`${app.url}${path}`, { method: 'HEAD' });
      expect([path, res.status, await res.text()]).toEqual([path, 200, '']);
    }
  });

  it('when an unknown route is called, then 404 problem+json with the configured type base', async () => {
    const res = await fetch(`${app.url}/api/v3/nothing-here?x=1`);
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect((await res.json()) as any).toEqual({
      type: `${app.config.publicBaseUrl}/problems/not-found`,
      title: 'Not Found',
      status: 404,
      detail: expect.any(String),
      instance: '/api/v3/nothing-here',
    });
  });

  it('when a known path is called with the wrong method, then 405 with Allow', async () => {
    const res = await fetch(`${app.url}/healthz`, { method: 'DELETE' });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET, HEAD');
    expect(((await res.json()) as any).type).toMatch(/problems\/method-not-allowed$/);
  });

  it('when /metrics is scraped, then request counts, latency, pool and event-loop lag are there', async () => {
    const text = await (
      await fetch(`${app.url}/metrics`, {
        headers: { authorization: `Bearer ${await adminToken(app)}` },
      })
    ).text();
    expect(text).toMatch(
      /keyward_http_requests_total\{method="GET",route="\/healthz",status="200"\} \d+/,
    );
    expect(text).toContain('keyward_http_request_duration_seconds_bucket');
    expect(text).toContain('keyward_pool_utilization');
    expect(text).toContain('keyward_nodejs_eventloop_lag_seconds');
  });

  it('when the OpenAPI document is fetched, then it is 3.1 and lists the system paths, and /docs renders it', async () => {
    const doc = (await (await fetch(`${app.url}/api/v3/openapi.json`)).json()) as any;
    expect(doc.openapi).toBe('3.1.0');
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining(['/healthz', '/readyz', '/metrics']),
    );
    // The page loads the bundled renderer from this origin (test/integration/admin/openapi.test.ts checks it in full).
    const html = await (await fetch(`${app.url}/docs`)).text();
    expect(html).toContain('/api/v3/openapi.json');
  });

  it('when the platform is bootstrapped, then the admin exists with an argon2id hash and a role holding all 82 permissions', async () => {
    const user = await app.ctx.db('users').where({ tenant_id: app.platformTenantId }).first();
    expect(user.password_hash).toMatch(/^\$argon2id\$v=19\$/);
    expect(user.password_hash).not.toContain(ADMIN_PASSWORD);
    const role = await app.ctx.db('roles').where({ id: user.role_id }).first();
    const permissions =
      typeof role.permissions === 'string' ? JSON.parse(role.permissions) : role.permissions;
    expect(new Set(permissions).size).toBe(82);
  });

  it('when bootstrap runs again on a non-empty database, then it does nothing', async () => {
    const { bootstrapPlatform } = await import('../../../api/services/bootstrap.ts');
    expect(await bootstrapPlatform(app.ctx)).toBeNull();
    expect(Number((await app.ctx.db('tenants').count({ n: '*' }).first())?.n)).toBe(1);
  });

  it('when the pool runs argon2id, then verify accepts the password and rejects another', async () => {
    const hash = await app.ctx.pool.run<string>('hashPassword', { password: 'pw-1' });
    expect(await app.ctx.pool.run('verifyPassword', { password: 'pw-1', hash })).toBe(true);
    expect(await app.ctx.pool.run('verifyPassword', { password: 'pw-2', hash })).toBe(false);
  });
});
