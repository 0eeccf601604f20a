/**
 * The hostile-input matrix (hardening issue): every route of the app's own route table, each of
 * its path, query, form and JSON fields, hostile values (NUL, a lone surrogate, an upper-case
 * UUID, prototype member names, 100 KiB, a wrong JSON type, extreme numbers and dates), with the
 * token of each API (the platform admin's for the admin API, a workload's holding every tenant
 * permission for the core and legacy APIs) and without a token. Each answer must come in
 * time, be no 5xx, and have the error shape of its route; afterwards the process answers and
 * every tenant's audit chain verifies.
 */
import { randomUUID } from 'node:crypto';
import { startTestApp, type TestApp } from '../../../support/app.ts';
import { TEST_ENGINE } from '../../../support/database.ts';
import { api, type TestTenant } from '../../../support/auth.ts';
import { createApp } from '../../../api/app.ts';
import { apiDocument as openApiDocument } from '../../../api/routes/index.ts';
import { brokenAuditChains } from './audit-chains.ts';
import {
  GENERIC_FIELDS,
  PROTOCOL_ERROR_BODY,
  PROTOCOL_SHAPED,
  ROUTE_FIELDS,
  callersOfEveryApi,
  expressRoutes,
  laneRoutes,
  oauthShaped,
  openApiFields,
  pathParams,
  type ApiCallers,
  type AppRoute,
  type Field,
} from './route-table.ts';

/** An answer slower than this is a finding (a hang, or work out of proportion to the input). */
const ANSWER_WITHIN_MS = 5_000;
const CONCURRENCY = 4;

interface Hostile {
  label: string;
  value: unknown;
}

/** Without a token most routes stop at authentication, so fewer values suffice there. */
const WITHOUT_TOKEN = new Set(['NUL', 'upper-case UUID', 'constructor', '100 KiB']);

/** The generic names of one route travel together: one probe puts the value in all of them. */
const GENERIC = '(generic)';

/** The hostile values; the upper-case UUID is the victim tenant's own id. */
function hostileValues(tenantId: string): Hostile[] {
  return [
    { label: 'NUL', value: 'a\u0000b' },
    { label: 'lone surrogate', value: 'a\ud800b' },
    { label: 'upper-case UUID', value: tenantId.toUpperCase() },
    { label: '__proto__', value: '__proto__' },
    { label: 'constructor', value: 'constructor' },
    { label: 'toString', value: 'toString' },
    { label: '100 KiB', value: 'x'.repeat(100 * 1024) },
    { label: 'wrong JSON type', value: { nested: ['x'] } },
    { label: 'extreme number', value: 1e308 },
    { label: 'negative number', value: -(2 ** 63) },
    { label: 'year 0000', value: '0000-01-01' },
    { label: 'year +275760', value: '+275760-09-13T00:00:00.001Z' },
  ];
}

interface Probe {
  route: AppRoute;
  field: Field;
  hostile: Hostile;
  token?: string;
}

interface Finding {
  request: string;
  field: string;
  input: string;
  token: boolean;
  status: number | string;
  problem: string;
}

describe(`hostile-input matrix over the route table (${TEST_ENGINE})`, () => {
  let app: TestApp;
  let victim: TestTenant;
  let callers: ApiCallers;
  beforeAll(async () => {
    app = await startTestApp();
    callers = await callersOfEveryApi(app, 'matrix-key');
    victim = callers.tenant;
  });
  afterAll(async () => {
    await app.stop();
  });

  /** A plausible value for a field, so a probe reaches past the first required-field check. */
  function baseline(field: Field): unknown {
    if (field.enum?.length) return field.enum[0];
    if (/tenant/i.test(field.name)) return victim.tenantId;
    if (field.name === 'kid') return 'matrix-key';
    // Record ids name nothing, so no probe deletes, disables or suspends a real record by its baseline.
    if (field.in === 'path') return field.name === 'name' ? 'matrix/in.p7m' : randomUUID();
    if (field.format === 'uuid') return randomUUID();
    if (field.type === 'integer' || field.type === 'number') return 1;
    if (field.type === 'boolean') return false;
    if (field.type === 'array') return [];
    if (field.type === 'object') return {};
    return 'matrix';
  }

  /** The request of one probe: the hostile value in one field, baselines in the others. */
  function request(
    route: AppRoute,
    fields: Field[],
    probe: Probe,
  ): { url: string; init: RequestInit } {
    let path = route.path;
    for (const name of pathParams(route.path)) {
      const f = fields.find((x) => x.in === 'path' && x.name === name) ?? {
        name,
        in: 'path' as const,
      };
      const v = f === probe.field ? probe.hostile.value : baseline(f);
      const text = typeof v === 'string' ? v : JSON.stringify(v);
      path = path.replace(
        new RegExp(`[:*]${name}\\b`),
        name === 'name' && f !== probe.field
          ? text
          : encodeURIComponent(text.isWellFormed() ? text : text.toWellFormed()),
      );
    }
    const query = new URLSearchParams();
    const json: Record<string, unknown> = {};
    const form = new URLSearchParams();
    const expanded = fields.flatMap((f) =>
      f.name === GENERIC
        ? GENERIC_FIELDS.filter(
            (name) => !fields.some((o) => o.in === f.in && o.name === name),
          ).map((name) => ({ ...f, name, generic: true }))
        : [f],
    );
    for (const f of expanded) {
      if (f.in === 'path') continue;
      const hostile =
        f === probe.field ||
        ('generic' in f && probe.field.name === GENERIC && probe.field.in === f.in);
      const v = hostile ? probe.hostile.value : baseline(f);
      if (!hostile && f.in !== 'json' && f.type !== undefined && f.type !== 'string') continue;
      if (f.in === 'json') Object.defineProperty(json, f.name, { value: v, enumerable: true });
      else {
        const target = f.in === 'query' ? query : form;
        // A wrong type in a query or form is the parameter repeated.
        if (typeof v === 'object') for (const item of ['x', 'y']) target.append(f.name, item);
        else if (hostile || f.in === 'form') target.set(f.name, String(v));
      }
    }
    if (probe.field.in === 'form' && !form.has('grant_type')) form.set('grant_type', 'password');
    const headers: Record<string, string> = probe.token
      ? { authorization: `Bearer ${probe.token}` }
      : {};
    const hasForm = fields.some((f) => f.in === 'form');
    const hasJson = fields.some((f) => f.in === 'json');
    const qs = query.toString();
    const init: RequestInit = {
      method: route.method,
      headers,
      signal: AbortSignal.timeout(ANSWER_WITHIN_MS),
    };
    if (route.method !== 'GET' && route.method !== 'DELETE' && route.method !== 'HEAD') {
      if (hasForm) {
        headers['content-type'] = 'application/x-www-form-urlencoded';
        // A form cannot carry a lone surrogate: URLSearchParams (like any UTF-8 encoder) sends U+FFFD.
        init.body = form.toString();
      } else if (hasJson) {
        headers['content-type'] = 'application/json';
        init.body = JSON.stringify(json);
      }
    }
    return { url: `${app.url}${path}${qs ? `?${qs}` : ''}`, init };
  }

  const tokenFor = (route: AppRoute): string => callers.tokenFor(route.path);

  /** The shape problem of an answer, or '' when it is right. */
  function shapeProblem(route: AppRoute, status: number, type: string, text: string): string {
    // Without REDIS_URL the jobs endpoints answer 503 queue-unavailable by design (jobs/api.test.ts).
    if (status === 503 && !app.config.redisUrl && text.includes('/problems/queue-unavailable'))
      return '';
    if (status >= 500) return `status ${status}`;
    // node:http refuses a request head over --max-http-header-size (16 KiB) before the app runs (RFC 6585 section 5).
    if (status < 400 || status === 431) return '';
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(text);
    } catch {
      return `a ${status} body that is not JSON (${type})`;
    }
    const protocol = PROTOCOL_SHAPED.get(`${route.method} ${route.path}`);
    if (protocol) {
      return type.startsWith(protocol.errorMedia) && PROTOCOL_ERROR_BODY[protocol.protocol]?.(body)
        ? ''
        : `not the ${protocol.protocol} error shape (${type}, ${text.slice(0, 120)})`;
    }
    if (oauthShaped(route.path)) {
      return typeof body.error === 'string' && type.startsWith('application/json')
        ? ''
        : `not the OAuth error shape (${type}, ${text.slice(0, 120)})`;
    }
    return type.startsWith('application/problem+json') &&
      body.status === status &&
      typeof body.type === 'string'
      ? ''
      : `not problem+json (${type}, ${text.slice(0, 120)})`;
  }

  it('when every route gets every hostile value in every field, with and without a token, then no answer is a 5xx, late or misshapen, and every audit chain still verifies', async () => {
    const doc = openApiDocument(app.config.publicBaseUrl);
    const routes = [...expressRoutes(createApp(app.ctx))];
    for (const lane of laneRoutes())
      if (!routes.some((r) => r.method === lane.method && r.path === lane.path)) routes.push(lane);
    const unenumerable: string[] = [];
    const plan: Array<{ route: AppRoute; fields: Field[] }> = [];
    for (const route of routes) {
      const key = `${route.method} ${route.path}`;
      const own = openApiFields(doc, route) ?? ROUTE_FIELDS[key] ?? null;
      if (own === null) {
        unenumerable.push(key);
        continue;
      }
      const fields = [...own];
      for (const name of pathParams(route.path))
        if (!fields.some((f) => f.in === 'path' && f.name === name))
          fields.push({ name, in: 'path' });
      const bodyIn: FieldInBody = own.some((f) => f.in === 'form') ? 'form' : 'json';
      fields.push({ name: GENERIC, in: 'query' });
      if (route.method !== 'GET' && route.method !== 'DELETE')
        fields.push({ name: GENERIC, in: bodyIn });
      plan.push({ route, fields });
    }
    const values = hostileValues(victim.tenantId);
    const probes: Array<Probe & { fields: Field[] }> = plan.flatMap(({ route, fields }) =>
      fields.flatMap((field) =>
        values.flatMap((hostile) =>
          [tokenFor(route), ...(WITHOUT_TOKEN.has(hostile.label) ? [undefined] : [])].map(
            (token) => ({ route, fields, field, hostile, token }),
          ),
        ),
      ),
    );
    const fieldCount = plan.reduce((n, p) => n + p.fields.length, 0);
    console.log(
      `hostile matrix: ${plan.length} routes x ${(fieldCount / plan.length).toFixed(1)} fields on average (${fieldCount} in all) x (${values.length} values with the route's token + ${WITHOUT_TOKEN.size} without) = ${probes.length} requests`,
    );

    const findings: Finding[] = [];
    const spent = new Map<string, number>();
    const reached = new Set<string>();
    const started = performance.now();
    let next = 0;
    const worker = async () => {
      while (next < probes.length) {
        const probe = probes[next++];
        const { url, init } = request(probe.route, probe.fields, probe);
        const t0 = performance.now();
        let status: number | string;
        let problem = '';
        try {
          const res = await fetch(url, init);
          const text = await res.text();
          status = res.status;
          if (probe.token && res.status !== 401 && res.status !== 403)
            reached.add(`${probe.route.method} ${probe.route.path}`);
          problem = shapeProblem(
            probe.route,
            res.status,
            res.headers.get('content-type') ?? '',
            text,
          );
        } catch (err) {
          status = (err as Error).name;
          problem = `no answer within ${ANSWER_WITHIN_MS} ms (${(err as Error).message})`;
        }
        const key = `${probe.route.method} ${probe.route.path}`;
        spent.set(key, (spent.get(key) ?? 0) + performance.now() - t0);
        if (!problem && performance.now() - t0 > ANSWER_WITHIN_MS)
          problem = `answered after ${Math.round(performance.now() - t0)} ms`;
        if (problem)
          findings.push({
            request: `${probe.route.method} ${probe.route.path}`,
            field: `${probe.field.in}.${probe.field.name}`,
            input: probe.hostile.label,
            token: Boolean(probe.token),
            status,
            problem,
          });
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    console.log(
      `hostile matrix: ${probes.length} requests in ${Math.round(performance.now() - started)} ms; ${findings.length} findings`,
    );
    console.log(
      `slowest routes (ms of request time): ${[...spent]
        .sort((a, b) => b[1] - a[1])
        .slice(0, 6)
        .map(([k, ms]) => `${k} ${Math.round(ms)}`)
        .join('; ')}`,
    );
    if (findings.length) console.log(summary(findings));

    expect(unenumerable).toEqual([]);
    // With its token, every route answers something else than 401/403 to some probe: the probes reach its handler.
    expect(
      plan.map(({ route }) => `${route.method} ${route.path}`).filter((key) => !reached.has(key)),
    ).toEqual([]);
    // A list entry for a route that no longer exists (or that the document now describes) is stale.
    const documented = new Set(
      routes.filter((r) => openApiFields(doc, r) !== null).map((r) => `${r.method} ${r.path}`),
    );
    const routed = new Set(routes.map((r) => `${r.method} ${r.path}`));
    expect(
      Object.keys(ROUTE_FIELDS).filter((key) => !routed.has(key) || documented.has(key)),
    ).toEqual([]);
    expect((await api(app, 'GET', '/healthz')).status).toBe(200);
    // The matrix may have suspended the victim through its platform path; its workload verifies its chain.
    expect(
      (
        await api(
          app,
          'POST',
          `/api/v3/admin/platform/tenants/${victim.tenantId}/resume`,
          callers.admin,
        )
      ).status,
    ).toBe(200);
    expect(await brokenAuditChains(app)).toEqual([]);
    expect(summary(findings)).toBe('');
  }, 240_000);
});

type FieldInBody = 'json' | 'form';

/** Findings grouped by route, status and problem, with one example input each. */
function summary(findings: Finding[]): string {
  const groups = new Map<string, { n: number; example: Finding }>();
  for (const f of findings) {
    const key = `${f.request} -> ${f.status} ${f.problem.replace(/\(.*$/s, '').slice(0, 60)}`;
    const g = groups.get(key) ?? { n: 0, example: f };
    g.n += 1;
    groups.set(key, g);
  }
  return [...groups]
    .map(
      ([key, { n, example }]) =>
        `${n} x ${key} e.g. ${example.field}=${example.input} token=${example.token}: ${example.problem.slice(0, 200)}`,
    )
    .join('\n');
}
