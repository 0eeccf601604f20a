/**
 * Faults across two API instances sharing Postgres and Redis: a Redis of the test's own that is
 * stopped and started, and the machine's Postgres reached through a proxy that refuses
 * connections for a few seconds (never the machine's servers themselves). Afterwards both
 * instances enforce every change made meanwhile. The figures are printed for the note.
 */
import { startTestApp, type TestApp } from '../../../support/app.ts';
import {
  createPostgresDatabase,
  SHARED_POSTGRES_URL,
  type TestDatabase,
} from '../../../support/database.ts';
import {
  adminToken,
  api,
  makeTenant,
  postForm,
  userToken,
  workloadToken,
  type TestTenant,
} from '../../../support/auth.ts';
import { startRedisServer, type TestRedisServer } from '../../support/redis-server.ts';
import { startTcpProxy, type TcpProxy } from '../../support/tcp-proxy.ts';
import { sleep } from '../../support/time.ts';

const RUNTIME = ['crypto.encrypt', 'crypto.decrypt', 'audit.verify', 'audit.events.read'];
const ADMIN = [
  'admin.keys.create',
  'admin.keys.revoke',
  'admin.keys.read',
  'admin.roles.update',
  'admin.roles.read',
];
const data = Buffer.from('attack at dawn').toString('base64');
const figures: Record<string, string> = {};

/** Milliseconds until `check` holds, polling every 20 ms; fails after `limitMs`. */
async function timeUntil(
  check: () => Promise<boolean>,
  limitMs: number,
  what = 'the change',
): Promise<number> {
  const started = Date.now();
  while (Date.now() - started < limitMs) {
    if (await check()) return Date.now() - started;
    await sleep(20);
  }
  throw new Error(`${what}: not enforced within ${limitMs} ms`);
}

/** Median latency in ms of `n` sequential calls. */
async function medianMs(n: number, call: () => Promise<unknown>): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < n; i += 1) {
    const t0 = performance.now();
    await call();
    times.push(performance.now() - t0);
  }
  times.sort((x, y) => x - y);
  return times[Math.floor(n / 2)];
}

const kidOf = (token: string) =>
  JSON.parse(Buffer.from(token.split('.')[0], 'base64url').toString()).kid as string;

describe('faults: Redis stopped and Postgres refused under two API instances (needs Postgres at TEST_DATABASE_URL or 127.0.0.1:5432 and redis-server)', () => {
  let db: TestDatabase;
  let proxy: TcpProxy;
  let redis: TestRedisServer;
  let a: TestApp;
  let b: TestApp;
  let t: TestTenant;
  let admin: string;
  const keys = (path: string) => `/api/v3/admin/tenants/${t.tenantId}/keys${path}`;

  beforeAll(async () => {
    db = await createPostgresDatabase(SHARED_POSTGRES_URL);
    const url = new URL(db.url!);
    proxy = await startTcpProxy({ host: url.hostname, port: Number(url.port || 5432) });
    url.hostname = '127.0.0.1';
    url.port = String(proxy.port);
    redis = await startRedisServer();
    a = await startTestApp({ REDIS_URL: redis.url }, { databaseUrl: url.toString() });
    b = await startTestApp({ REDIS_URL: redis.url }, { databaseUrl: url.toString() });
    t = await makeTenant(a, [...RUNTIME, ...ADMIN]);
    admin = await userToken(a, t);
    for (const kid of ['k1', 'k2'])
      expect((await api(a, 'POST', keys(''), admin, { kid, type: 'aes-256' })).status).toBe(201);
  });
  afterAll(async () => {
    console.log(`fault figures: ${JSON.stringify(figures)}`);
    await a?.stop();
    await b?.stop();
    await redis?.close();
    await proxy?.close();
    await db?.drop();
  });

  const encryptOn = (app: TestApp, token: string, kid: string) =>
    api(app, 'POST', '/api/v3/crypto/encrypt', token, { kid, data });

  it('when Redis is up, then instance B refuses a token revoked on A within 1 s', async () => {
    const token = await workloadToken(a, t);
    expect((await encryptOn(b, token, 'k1')).status).toBe(200);
    expect((await postForm(a, '/api/v3/auth/token/revoke', { token })).status).toBe(200);
    const ms = await timeUntil(async () => (await encryptOn(b, token, 'k1')).status === 401, 1000);
    figures.revocationRedisUpMs = String(ms);
  });

  it('when Redis is down, then revocations, key revocation, role narrowing and signing-key rotation on A answer success and B enforces each within 5 s, at its usual latency', async () => {
    const workload = await workloadToken(a, t);
    const narrowed = await makeTenant(a, ['crypto.encrypt', 'crypto.decrypt']);
    const narrowedToken = await workloadToken(a, narrowed);
    await api(a, 'POST', `/api/v3/admin/tenants/${narrowed.tenantId}/keys`, await adminToken(a), {
      kid: 'n1',
      type: 'aes-256',
    });
    expect((await encryptOn(b, narrowedToken, 'n1')).status).toBe(200);
    const warm = await workloadToken(b, t);
    const normal = await medianMs(15, () => encryptOn(b, warm, 'k2'));

    await redis.stop();
    await timeUntil(
      async () => a.ctx.redis?.status !== 'ready' && b.ctx.redis?.status !== 'ready',
      10_000,
    );

    const outage = await medianMs(15, () => encryptOn(b, warm, 'k2'));
    const t0 = performance.now();
    const issued = await postForm(b, '/api/v3/auth/token', {
      grant_type: 'client_credentials',
      client_id: t.clientId,
      client_secret: t.clientSecret,
    });
    const tokenMs = performance.now() - t0;
    expect(issued.status).toBe(200);
    figures.encryptMedianNormalMs = normal.toFixed(1);
    figures.encryptMedianRedisDownMs = outage.toFixed(1);
    figures.tokenRequestRedisDownMs = tokenMs.toFixed(1);
    // The defect answered after 15 s (bearer) and 25 s (token); the ratio itself is printed above.
    expect(outage).toBeLessThan(Math.max(normal * 2, normal + 100));
    expect(tokenMs).toBeLessThan(2000);

    const platform = await adminToken(a);
    const oldSigningKid = kidOf(await workloadToken(b, t));
    expect((await postForm(a, '/api/v3/auth/token/revoke', { token: workload })).status).toBe(200);
    expect((await api(a, 'POST', keys('/k1/revoke'), admin)).status).toBe(200);
    expect(
      (await api(a, 'POST', '/api/v3/admin/platform/signing-keys/rotate', platform)).status,
    ).toBe(201);
    expect(
      (
        await api(
          a,
          'PATCH',
          `/api/v3/admin/tenants/${narrowed.tenantId}/roles/${narrowed.roleId}`,
          platform,
          { permissions: ['crypto.decrypt'] },
        )
      ).status,
    ).toBe(200);
    const started = Date.now();
    await timeUntil(
      async () => (await encryptOn(b, workload, 'k2')).status === 401,
      5000,
      'token revocation',
    );
    await timeUntil(
      async () => (await encryptOn(b, warm, 'k1')).status === 409,
      5000,
      'key revocation',
    );
    await timeUntil(
      async () => kidOf(await workloadToken(b, t)) !== oldSigningKid,
      5000,
      'signing-key rotation',
    );
    await timeUntil(
      async () => (await encryptOn(b, narrowedToken, 'n1')).status === 401,
      5000,
      'role narrowing',
    );
    figures.allEnforcedRedisDownMs = String(Date.now() - started);
    // A token issued after the narrowing works, without the removed permission.
    await sleep(1100);
    const fresh = await workloadToken(b, narrowed);
    expect((await encryptOn(b, fresh, 'n1')).status).toBe(403);
  });

  it('when Redis comes back, then the fast path works again: B refuses a token revoked on A within 1 s', async () => {
    await redis.start();
    await timeUntil(
      async () => a.ctx.redis?.status === 'ready' && b.ctx.redis?.status === 'ready',
      10_000,
    );
    await sleep(300); // the subscribers re-subscribe after their connection is ready
    const token = await workloadToken(a, t);
    expect((await encryptOn(b, token, 'k2')).status).toBe(200);
    expect((await postForm(a, '/api/v3/auth/token/revoke', { token })).status).toBe(200);
    figures.revocationAfterRedisOutageMs = String(
      await timeUntil(async () => (await encryptOn(b, token, 'k2')).status === 401, 1000),
    );
  });

  it('when Postgres refuses connections for 3 s, then database-backed requests answer 503 database-unavailable with Retry-After, cached keys keep encrypting, audit events raised meanwhile are written once, and both instances work again after', async () => {
    const deniedIds: string[] = [];
    const token = await workloadToken(b, t);
    expect((await encryptOn(b, token, 'k2')).status).toBe(200);
    proxy.refuse();
    try {
      const listed = await api(a, 'GET', keys(''), admin);
      expect(listed.status).toBe(503);
      expect(listed.headers.get('content-type')).toMatch(/problem\+json/);
      expect(listed.body.type).toMatch(/database-unavailable$/);
      expect(Number(listed.headers.get('retry-after'))).toBeGreaterThan(0);
      const login = await postForm(a, '/api/v3/auth/token', {
        grant_type: 'password',
        username: t.userEmail,
        password: t.userPassword,
        tenant_id: t.tenantId,
      });
      expect(login.status).toBe(503);
      expect(login.body.error).toBeDefined();
      expect((await encryptOn(b, token, 'k2')).status).toBe(200);
      // Refused accesses raise audit events while the database is away: none may be lost or doubled.
      for (let i = 0; i < 3; i += 1) {
        const denied = await encryptOn(a, 'not-a-token', 'k2');
        expect(denied.status).toBe(401);
        deniedIds.push(denied.headers.get('x-request-id')!);
      }
      await sleep(3000);
    } finally {
      proxy.accept();
    }
    await timeUntil(async () => (await api(a, 'GET', keys(''), admin)).status === 200, 15_000);
    const writtenRows = () =>
      a.ctx
        .db('audit_events')
        .whereRaw("details->>'requestId' = any(?)", [deniedIds])
        .select('details');
    // The writer retries on its own once the database answers again.
    await timeUntil(
      async () => (await writtenRows()).length >= deniedIds.length,
      15_000,
      'audit events raised during the outage',
    );
    await a.ctx.audit.flush();
    const written = await writtenRows();
    figures.auditEventsRaisedDuringDbOutage = String(deniedIds.length);
    figures.auditEventsWrittenAfter = String(written.length);
    expect(
      written
        .map((r) => (typeof r.details === 'string' ? JSON.parse(r.details) : r.details).requestId)
        .sort(),
    ).toEqual([...deniedIds].sort());
    const verify = await api(a, 'POST', '/api/v3/audit/verify', token, {});
    expect(verify.status).toBe(200);
    expect(verify.body.valid).toBe(true);
  });
});
