/**
 * The audit log through the Admin API (/api/v3/admin/tenants/{tenantId}/audit/*), which the
 * console uses: the same events, verdict and head as the Audit API gives the tenant's workload,
 * for a person's service-admin token, and never another tenant's log.
 */
import { startTestApp, type TestApp } from '../../../support/app.ts';
import {
  adminToken,
  api,
  makeTenant,
  userToken,
  workloadToken,
  type TestTenant,
} from '../../../support/auth.ts';

let app: TestApp;
let a: TestTenant;
let b: TestTenant;
let userA: string;
let userB: string;
let coreA: string;
const PERMS = ['audit.events.read', 'audit.verify', 'admin.keys.create'];
const base = (t: TestTenant) => `/api/v3/admin/tenants/${t.tenantId}/audit`;

beforeAll(async () => {
  app = await startTestApp();
  a = await makeTenant(app, PERMS);
  b = await makeTenant(app, PERMS);
  userA = await userToken(app, a);
  userB = await userToken(app, b);
  coreA = await workloadToken(app, a);
  await api(app, 'POST', `/api/v3/admin/tenants/${a.tenantId}/keys`, userA, {
    type: 'aes-256',
    kid: 'k1',
  });
});
afterAll(async () => {
  await app.stop();
});

describe('GET/POST /api/v3/admin/tenants/{tenantId}/audit/*', () => {
  it("when a person reads their tenant's events, verdict and head, then they are the Audit API's answers for that tenant", async () => {
    const events = await api(app, 'GET', `${base(a)}/events?limit=1000`, userA);
    expect(events.status).toBe(200);
    const core = await api(app, 'GET', '/api/v3/audit/events?limit=1000', coreA);
    const seqs = (r: typeof events) => (r.body.items as Array<{ seq: number }>).map((e) => e.seq);
    // The workload's read may add its own events after the person's: the person's are a prefix.
    expect(seqs(core).slice(0, seqs(events).length)).toEqual(seqs(events));
    expect((events.body.items as Array<{ action: string }>).map((e) => e.action)).toContain(
      'key.create',
    );
    const verdict = await api(app, 'POST', `${base(a)}/verify`, userA, {});
    expect(verdict.status).toBe(200);
    expect(verdict.body.valid).toBe(true);
    const head = await api(app, 'GET', `${base(a)}/head`, userA);
    expect(head.status).toBe(200);
    expect(head.body.tenantId).toBe(a.tenantId);
  });

  it("when a person of another tenant asks for this tenant's log, then 403; a workload token is the wrong audience (401)", async () => {
    expect((await api(app, 'GET', `${base(a)}/events`, userB)).status).toBe(403);
    expect((await api(app, 'POST', `${base(a)}/verify`, userB, {})).status).toBe(403);
    expect((await api(app, 'GET', `${base(a)}/events`, coreA)).status).toBe(401);
  });

  it("when the platform administrator reads any tenant's log, then it is that tenant's", async () => {
    const root = await adminToken(app);
    const events = await api(app, 'GET', `${base(b)}/events`, root);
    expect(events.status).toBe(200);
    expect(events.body.items?.length).toBeGreaterThan(0);
  });

  it('when a filter is malformed, then 400 validation-failed as on the Audit API', async () => {
    for (const query of ['limit=0', 'from=yesterday', 'nope=1']) {
      expect((await api(app, 'GET', `${base(a)}/events?${query}`, userA)).status).toBe(400);
      expect((await api(app, 'GET', `/api/v3/audit/events?${query}`, coreA)).status).toBe(400);
    }
  });
});
