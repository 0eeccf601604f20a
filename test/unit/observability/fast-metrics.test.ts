/**
 * The per-request series (HTTP requests and latency, crypto operations, tokens) are
 * recorded by shared/metrics/fast.ts instead of prom-client, whose labels() child re-hashes its
 * labels on every call. /metrics must not change: the same observations recorded into
 * prom-client's Counter and Histogram and into ours give the same exposition text and the same
 * JSON, for several label sets, values on bucket bounds (le is inclusive), below the first and
 * above the last bound.
 */
import { Counter, Histogram, Registry } from 'prom-client';
import { FastCounter, FastHistogram } from '../../../shared/metrics/fast.ts';
import { LATENCY_BUCKETS, METRIC_PREFIX } from '../../../shared/metrics/index.ts';
import { createMetrics } from '../../../api/metrics.ts';

const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10];
/** Every bound, just above and below each, zero, negatives, and past the last bound. */
const VALUES = [
  ...BUCKETS,
  ...BUCKETS.map((b) => b * (1 + 1e-9)),
  ...BUCKETS.map((b) => b * (1 - 1e-9)),
  0,
  -0.5,
  1e-7,
  10.000001,
  3600,
  0.1 + 0.2,
];
const LABEL_SETS = [
  ['POST', '/api/v3/crypto/encrypt', '200'],
  ['GET', '/api/v3/keys/:kid', '404'],
  ['OTHER', 'unmatched', '405'],
  ['POST', '/oauth2/token', '200'],
  ['GET', 'a "quoted" \\ route\nwith a newline', '500'],
];

/** prom-client's and our counter and histogram, each on its own registry, same names. */
function pair() {
  const config = (registry: Registry) => ({
    labelNames: ['method', 'route', 'status'],
    registers: [registry],
  });
  const old = new Registry();
  const ours = new Registry();
  const names = {
    counter: { name: 'x_requests_total', help: 'Requests, by "method"\\route' },
    histogram: { name: 'x_request_seconds', help: 'Latency\nby method' },
  };
  return {
    old,
    ours,
    oldCounter: new Counter({ ...names.counter, ...config(old) }),
    oldHistogram: new Histogram({ ...names.histogram, ...config(old), buckets: BUCKETS }),
    counter: new FastCounter({ ...names.counter, ...config(ours) }),
    histogram: new FastHistogram({ ...names.histogram, ...config(ours), buckets: BUCKETS }),
  };
}

describe('the fast counter and histogram', () => {
  it('when the same observations are recorded into prom-client and ours, then the exposition text and JSON are the same', async () => {
    const p = pair();
    // Interleaved so series are first seen in an order that is neither sorted nor grouped.
    let n = 0;
    for (const value of VALUES) {
      for (let i = 0; i < LABEL_SETS.length; i += 1) {
        const labels = LABEL_SETS[(i + n) % LABEL_SETS.length];
        n += 1;
        if (n % 7 === 3) continue;
        const [method, route, status] = labels;
        p.oldCounter.inc({ method, route, status });
        p.oldHistogram.observe({ method, route, status }, value);
        p.counter.labels(...labels).inc();
        p.histogram.labels(...labels).observe(value);
      }
    }
    p.oldCounter.inc({ method: 'PUT', route: '/r', status: '201' }, 2.5);
    p.counter.labels('PUT', '/r', '201').inc(2.5);

    const text = await p.ours.metrics();
    expect(text).toBe(await p.old.metrics());
    expect(await p.ours.getMetricsAsJSON()).toEqual(await p.old.getMetricsAsJSON());
    // The comparison saw what it should: every label set, and a bound's value in its own bucket.
    expect(text).toContain(
      'x_request_seconds_bucket{le="0.0005",method="OTHER",route="unmatched",status="405"}',
    );
    expect(text).toContain('x_requests_total{method="PUT",route="/r",status="201"} 2.5');
    expect(text).toContain('route="a \\"quoted\\" \\\\ route\\nwith a newline"');
  });

  it('when a value equals a bucket bound, then it is counted in that bucket (le is inclusive)', async () => {
    const p = pair();
    p.histogram.labels('GET', '/', '200').observe(0.005);
    p.histogram.labels('GET', '/', '200').observe(11);
    const text = await p.ours.metrics();
    expect(text).toContain(
      'x_request_seconds_bucket{le="0.0025",method="GET",route="/",status="200"} 0',
    );
    expect(text).toContain(
      'x_request_seconds_bucket{le="0.005",method="GET",route="/",status="200"} 1',
    );
    expect(text).toContain(
      'x_request_seconds_bucket{le="10",method="GET",route="/",status="200"} 1',
    );
    expect(text).toContain(
      'x_request_seconds_bucket{le="+Inf",method="GET",route="/",status="200"} 2',
    );
    expect(text).toContain('x_request_seconds_sum{method="GET",route="/",status="200"} 11.005');
    expect(text).toContain('x_request_seconds_count{method="GET",route="/",status="200"} 2');
  });

  it('when nothing was recorded, then the families are exposed with no samples, as prom-client does', async () => {
    const p = pair();
    expect(await p.ours.metrics()).toBe(await p.old.metrics());
  });

  it('when a value is not a finite number or a label set is malformed, then it is refused', () => {
    const p = pair();
    const series = p.histogram.labels('GET', '/', '200');
    expect(() => series.observe(Number.NaN)).toThrow(TypeError);
    expect(() => series.observe(Infinity)).toThrow(TypeError);
    expect(() => p.counter.labels('GET', '/', '200').inc(-1)).toThrow(TypeError);
    expect(() => p.counter.labels('GET', '/')).toThrow(TypeError);
    expect(() => p.counter.labels('GET\0/', '200', 'x')).toThrow(TypeError);
    expect(() => p.counter.labels('GET\0/\u0000200')).toThrow(TypeError);
    expect(series.count).toBe(0);
  });

  it('when the registry is reset, then a series a caller kept counts on from zero', async () => {
    const p = pair();
    const series = p.counter.labels('GET', '/', '200');
    series.inc();
    p.ours.resetMetrics();
    series.inc();
    expect(await p.ours.metrics()).toContain(
      'x_requests_total{method="GET",route="/",status="200"} 1',
    );
  });
});

describe("the API's per-request series", () => {
  it('when requests, crypto operations and tokens are recorded, then their families read as the prom-client ones did', async () => {
    const metrics = createMetrics({ utilization: () => 0, queueSize: () => 0, threads: () => 1 });
    // The definitions and recording of main before the change, kept here as the reference.
    const old = new Registry();
    const registers = [old];
    const labelNames = ['method', 'route', 'status'];
    const requests = new Counter({
      name: `${METRIC_PREFIX}http_requests_total`,
      help: 'HTTP requests by method, route template and status',
      labelNames,
      registers,
    });
    const latency = new Histogram({
      name: `${METRIC_PREFIX}http_request_duration_seconds`,
      help: 'HTTP request latency by method, route template and status',
      labelNames,
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
      registers,
    });
    const cryptoOps = new Histogram({
      name: `${METRIC_PREFIX}crypto_operation_duration_seconds`,
      help: 'Runtime crypto operations by operation, key type and outcome, with their latency',
      labelNames: ['operation', 'key_type', 'outcome'],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    const tokens = new Counter({
      name: `${METRIC_PREFIX}tokens_total`,
      help: 'Access tokens issued and refused, by grant, outcome and reason',
      labelNames: ['grant', 'outcome', 'reason'],
      registers,
    });

    const requestsSeen: Array<[string, string, number]> = [
      ['POST', '/api/v3/crypto/encrypt', 200],
      ['BREW', 'unmatched', 404],
      ['GET', '/api/v3/keys/:kid', 401],
      ['POST', '/api/v3/crypto/encrypt', 429],
    ];
    let i = 0;
    for (const value of VALUES) {
      const [rawMethod, route, status] = requestsSeen[i % requestsSeen.length];
      i += 1;
      metrics.observe(rawMethod, route, status, value);
      const method = ['GET', 'POST'].includes(rawMethod) ? rawMethod : 'OTHER';
      requests.inc({ method, route, status: String(status) });
      latency.observe({ method, route, status: String(status) }, value);

      const op = i % 3 === 0 ? 'sign' : 'encrypt';
      const keyType = i % 2 === 0 ? 'aes-256' : 'a key/type with spaces';
      const outcome = i % 5 === 0 ? 'error' : 'success';
      metrics.domain.cryptoOperation(op, keyType, outcome, value);
      cryptoOps.observe(
        { operation: op, key_type: i % 2 === 0 ? 'aes-256' : 'other', outcome },
        value,
      );

      const grant = i % 2 === 0 ? 'client_credentials' : 'password';
      const reason = i % 4 === 0 ? 'invalid_client' : 'issued';
      metrics.domain.token(grant, reason === 'issued' ? 'issued' : 'refused', reason);
      tokens.inc({ grant, outcome: reason === 'issued' ? 'issued' : 'refused', reason });
    }

    for (const name of [
      'http_requests_total',
      'http_request_duration_seconds',
      'crypto_operation_duration_seconds',
      'tokens_total',
    ]) {
      const full = `${METRIC_PREFIX}${name}`;
      expect(await metrics.registry.getSingleMetricAsString(full)).toBe(
        await old.getSingleMetricAsString(full),
      );
    }
    const text = await metrics.registry.metrics();
    expect(text).toContain('method="OTHER",route="unmatched",status="404"');
    expect(text).toContain('key_type="other"');
  });
});
