/**
 * The API's /metrics: every series in the keyward_ namespace, route labels that are templates
 * (or "unmatched") on successes, refusals and unknown paths alike, and no concrete id in any
 * label after a request to every route of the table with ids in its path. The domain series
 * (crypto operations, tokens, key events) count what happened.
 */
import { randomUUID } from 'node:crypto';
import { createApp } from '../../../api/app.ts';
import { startTestApp, type TestApp } from '../../../support/app.ts';
import { TEST_ENGINE } from '../../../support/database.ts';
import {
  adminToken,
  api,
  makeTenant,
  postForm,
  userToken,
  workloadToken,
  type TestTenant,
} from '../../../support/auth.ts';
import { expressRoutes, laneRoutes } from '../http/route-table.ts';
import { laneRoutes as tableLaneRoutes } from '../../../api/routes/index.ts';

const PERMISSIONS = ['crypto.encrypt', 'crypto.decrypt', 'admin.keys.create', 'admin.keys.read'];
const data = Buffer.from('attack at dawn').toString('base64');

/** Every label value of the sample lines of an exposition, with the line it is on. */
function labelValues(text: string): Array<{ name: string; value: string; line: string }> {
  const out: Array<{ name: string; value: string; line: string }> = [];
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || !line.includes('{')) continue;
    for (const m of line.matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g))
      out.push({ name: m[1], value: m[2], line });
  }
  return out;
}

/** The value of one sample, or 0 when the series is absent. */
function sample(text: string, series: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line ? Number(line.slice(series.length + 1)) : 0;
}

describe(`the API's metrics (${TEST_ENGINE})`, () => {
  let app: TestApp;
  let t: TestTenant;
  let core: string;
  let admin: string;
  let platformAdmin: string;
  const scrape = async () =>
    (
      await fetch(`${app.url}/metrics`, {
        headers: { authorization: `Bearer ${platformAdmin}` },
      })
    ).text();

  beforeAll(async () => {
    app = await startTestApp();
    t = await makeTenant(app, PERMISSIONS);
    core = await workloadToken(app, t);
    admin = await userToken(app, t);
    platformAdmin = await adminToken(app);
    const created = await api(app, 'POST', `/api/v3/admin/tenants/${t.tenantId}/keys`, admin, {
      kid: 'aes',
      type: 'aes-256',
    });
    if (created.status !== 201) throw new Error(JSON.stringify(created.body));
  });
  afterAll(async () => {
    await app.stop();
  });

  it('when every route of the table is called with ids in its path, then route labels are templates or "unmatched" and no label holds an id', async () => {
    const routes = [...expressRoutes(createApp(app.ctx)), ...laneRoutes()];
    const concrete = new Set<string>([t.tenantId]);
    for (const r of routes) {
      const path = r.path.replace(/[:*](\w+)/g, (_m, name: string) => {
        if (name === 'tenantId') return t.tenantId;
        const id = name === 'kid' ? `kid-${randomUUID().slice(0, 8)}` : randomUUID();
        concrete.add(id);
        return id;
      });
      for (const token of [core, admin]) {
        const body = ['GET', 'HEAD', 'DELETE'].includes(r.method) ? undefined : {};
        await api(app, r.method, path, token, body);
      }
    }
    const unknown = randomUUID();
    concrete.add(unknown);
    const stray = await api(
      app,
      'GET',
      `/api/v3/admin/tenants/${t.tenantId}/none/${unknown}`,
      admin,
    );
    expect(stray.status).toBe(404);

    const text = await scrape();
    const labels = labelValues(text);
    // A mount the runtime lane serves whole (Vault Transit's /v1) is labelled by its mount path.
    const mounts = tableLaneRoutes()
      .filter((r) => r.kind === 'protocol-mount')
      .map((r) => r.path);
    const templates = new Set([...routes.map((r) => r.path), ...mounts, 'unmatched']);
    const routeLabels = new Set(labels.filter((l) => l.name === 'route').map((l) => l.value));
    expect([...routeLabels].filter((r) => !templates.has(r))).toEqual([]);
    expect(labels.filter((l) => [...concrete].some((id) => l.value.includes(id)))).toEqual([]);
    expect(labels.filter((l) => /[0-9a-f]{8}-[0-9a-f]{4}-/i.test(l.value))).toEqual([]);
    expect(text).not.toContain(t.tenantId);
    // Refusals keep their template (the prefix is not lost on errors); unknown paths are "unmatched".
    expect(text).toMatch(
      /keyward_http_requests_total\{method="GET",route="\/api\/v3\/admin\/tenants\/:tenantId\/keys\/:kid",status="404"\} [1-9]/,
    );
    expect(text).toMatch(
      /keyward_http_requests_total\{method="GET",route="unmatched",status="404"\} [1-9]/,
    );
    // Every series is in the namespace.
    const names = text
      .split('\n')
      .filter((l) => l.startsWith('# TYPE '))
      .map((l) => l.split(' ')[2]);
    expect(names.filter((n) => !n.startsWith('keyward_'))).toEqual([]);
  });

  it('when operations run, tokens are asked for and a key is created, then the domain series count them by closed labels', async () => {
    const before = await scrape();
    const ok =
      'keyward_crypto_operation_duration_seconds_count{operation="crypto.encrypt",key_type="aes-256",outcome="success"}';
    const refused =
      'keyward_crypto_operation_duration_seconds_count{operation="crypto.encrypt",key_type="none",outcome="refused"}';
    const issued =
      'keyward_tokens_total{grant="client_credentials",outcome="issued",reason="issued"}';
    const badClient =
      'keyward_tokens_total{grant="client_credentials",outcome="refused",reason="invalid_grant"}';
    const unknownGrant =
      'keyward_tokens_total{grant="unknown",outcome="refused",reason="unsupported_grant_type"}';
    const created = 'keyward_key_events_total{event="create"}';

    expect(
      (await api(app, 'POST', '/api/v3/crypto/encrypt', core, { kid: 'aes', data })).status,
    ).toBe(200);
    expect(
      (await api(app, 'POST', '/api/v3/crypto/encrypt', core, { kid: 'nope', data })).status,
    ).toBe(404);
    await workloadToken(app, t);
    const wrong = {
      grant_type: 'client_credentials',
      client_id: t.clientId,
      client_secret: 'x'.repeat(40),
    };
    const refusal = await postForm(app, '/api/v3/auth/token', wrong);
    expect([refusal.status, refusal.body.error]).toEqual([400, 'invalid_grant']);
    expect(
      (await postForm(app, '/api/v3/auth/token', { grant_type: `made-up-${randomUUID()}` })).status,
    ).toBe(400);
    expect(
      (
        await api(app, 'POST', `/api/v3/admin/tenants/${t.tenantId}/keys`, admin, {
          kid: 'second',
          type: 'aes-256',
        })
      ).status,
    ).toBe(201);

    const after = await scrape();
    for (const series of [ok, refused, issued, badClient, unknownGrant, created])
      expect([series, sample(after, series) - sample(before, series)]).toEqual([series, 1]);
    expect(after).not.toContain('made-up-');
    expect(after).toContain('keyward_pool_utilization');
    expect(after).toContain('keyward_pool_queue_size');
    expect(after).toContain('# TYPE keyward_audit_write_failures_total counter');
    expect(after).toContain('# TYPE keyward_conversion_bytes_total counter');
  });
});
