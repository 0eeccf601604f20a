/**
 * The worker's own port (WORKER_METRICS_PORT): /healthz and /metrics with job counts, queue depth
 * and conversions after a real job; and the deploy files (deploy/grafana-dashboard.json,
 * deploy/prometheus-alerts.yml) use only metrics that the API or the worker expose.
 * Needs Postgres and Redis, as the other jobs tests.
 */
import { readFileSync } from 'node:fs';
import { Readable } from 'node:stream';
import {
  OpenSslDir,
  makeKey,
  syntheticEnveloped,
  type TestKey,
} from '../../../support/fixtures/pkcs7.ts';
import { adminToken, api } from '../../../support/auth.ts';
import { freePort } from '../../../support/free-port.ts';
import {
  finished,
  spawnWorker,
  startJobsEnv,
  tenantWithKeys,
  upload,
  waitForJob,
  type JobsEnv,
  type WorkerChild,
} from '../jobs/harness.ts';

const root = new URL('../../../', import.meta.url);

/** The metric names of an exposition (a histogram's _bucket, _sum and _count series included). */
function exposed(text: string): Set<string> {
  const names = new Set<string>();
  for (const line of text.split('\n')) {
    const m = /^# TYPE (\w+) (\w+)$/.exec(line);
    if (!m) continue;
    names.add(m[1]);
    if (m[2] === 'histogram' || m[2] === 'summary')
      for (const suffix of ['_bucket', '_sum', '_count']) names.add(`${m[1]}${suffix}`);
  }
  return names;
}

/** Every keyward_ metric a PromQL text names. */
const usedIn = (text: string) => [...new Set(text.match(/\bkeyward_\w+/g) ?? [])];

let env: JobsEnv;
let ssl: OpenSslDir;
let key: TestKey;
let worker: WorkerChild;
let port: number;
const fromWorker = (path: string, init?: RequestInit) =>
  fetch(`http://127.0.0.1:${port}${path}`, init);

beforeAll(async () => {
  ssl = new OpenSslDir();
  key = makeKey(ssl, 'metrics-rsa', 'rsa-2048');
  env = await startJobsEnv();
  port = await freePort();
  worker = await spawnWorker(env.workerEnv({ WORKER_METRICS_PORT: String(port) }));
}, 60_000);

afterAll(async () => {
  await worker?.stop();
  await env?.close();
  ssl?.cleanup();
});

describe("the worker's metrics port", () => {
  it('when /healthz is asked, then 200 ok; another method is 405 and another path 404', async () => {
    const health = await fromWorker('/healthz');
    expect([health.status, await health.json()]).toEqual([200, { status: 'ok' }]);
    expect((await fromWorker('/metrics', { method: 'POST' })).status).toBe(405);
    expect((await fromWorker('/nothing')).status).toBe(404);
    expect(worker.output()).toContain('worker metrics and health listening');
  });

  it('when a conversion job ran, then /metrics counts the job, its conversion and the queue depth', async () => {
    const tenant = await tenantWithKeys(env.app, ssl, [key]);
    const up = await upload(
      env.app,
      tenant.token,
      'in/small.p7m',
      Readable.toWeb(
        Readable.from(syntheticEnveloped(key, 256 * 1024)),
      ) as ReadableStream<Uint8Array>,
    );
    expect(up.status).toBe(201);
    const job = await api(env.app, 'POST', '/api/v3/migration/jobs', tenant.token, {
      source: { key: 'in/small.p7m' },
      metadata: {},
      output: { prefix: 'out/' },
    });
    expect(job.status).toBe(202);
    const view = await waitForJob(env.app, tenant.token, job.body.id as string, finished);
    expect(view.state).toBe('completed');
    await worker.waitForOutput('conversion completed');

    const res = await fromWorker('/metrics');
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).toMatch(/keyward_jobs_total\{queue="convert",outcome="completed"\} 1\b/);
    expect(text).toMatch(
      /keyward_job_duration_seconds_count\{queue="convert",outcome="completed"\} 1\b/,
    );
    expect(text).toMatch(
      /keyward_conversion_duration_seconds_count\{input_type="envelopedData",outcome="success"\} 1\b/,
    );
    expect(text).toMatch(
      /keyward_conversion_bytes_total\{input_type="envelopedData",outcome="success"\} \d{6,}/,
    );
    expect(text).toMatch(/keyward_queue_jobs\{queue="convert",state="waiting"\} 0\b/);
    expect(text).not.toContain(tenant.tenantId);
    expect(text).not.toContain(job.body.id as string);
  });
});

describe('the deploy files', () => {
  it('when the dashboard and the alert rules are read, then every keyward_ metric they use is exposed by the API or the worker', async () => {
    const api = await (
      await fetch(`${env.app.url}/metrics`, {
        headers: { authorization: `Bearer ${await adminToken(env.app)}` },
      })
    ).text();
    const available = new Set([
      ...exposed(api),
      ...exposed(await (await fromWorker('/metrics')).text()),
    ]);

    const dashboard = JSON.parse(
      readFileSync(new URL('deploy/grafana-dashboard.json', root), 'utf8'),
    ) as { panels: Array<{ title: string; targets: Array<{ expr: string }> }> };
    const dashboardUses = usedIn(
      dashboard.panels.flatMap((p) => p.targets.map((t) => t.expr)).join('\n'),
    );
    const alerts = readFileSync(new URL('deploy/prometheus-alerts.yml', root), 'utf8');
    const alertUses = usedIn(alerts);

    expect(dashboardUses.filter((m) => !available.has(m))).toEqual([]);
    expect(alertUses.filter((m) => !available.has(m))).toEqual([]);
    // The signals the issue names are covered: error rate, latency, queue depth, audit failures.
    for (const signal of [
      'keyward_http_requests_total',
      'keyward_http_request_duration_seconds_bucket',
      'keyward_queue_jobs',
      'keyward_pool_queue_size',
      'keyward_audit_write_failures_total',
    ]) {
      expect([signal, alertUses.includes(signal)]).toEqual([signal, true]);
      expect([signal, dashboardUses.includes(signal)]).toEqual([signal, true]);
    }
  });
});
