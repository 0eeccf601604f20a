/**
 * GET /metrics, what Prometheus scrapes. It answers only a bearer (core or admin audience, the
 * area's) holding admin.platform.metrics.read (a workload token for the scraper, or an
 * administrator's): its series describe every tenant's traffic.
 *
 * Tests: test/integration/auth/endpoint-budgets.test.ts,
 *   test/integration/observability/deploy.test.ts, test/integration/http/system-endpoints.test.ts,
 *   test/integration/observability/metrics.test.ts
 */
import Type from 'typebox';
import { endpoint } from '../rows/endpoint.ts';

/** Mounted at /metrics (after authentication). */
export const METRICS_ENDPOINTS = [
  endpoint({
    method: 'get',
    path: '/',
    operationId: 'metrics',
    tag: 'system',
    summary: 'Prometheus metrics',
    description:
      "A bearer token of either audience: the series describe every tenant's traffic. Route labels are path templates, never raw paths.",
    access: { anyOf: ['admin.platform.metrics.read'] },
    answer: {
      status: 200,
      description: 'the text exposition format',
      media: 'text/plain',
      schema: Type.String({
        examples: [
          '# HELP keyward_http_requests_total HTTP requests by method, route template and status\n# TYPE keyward_http_requests_total counter\nkeyward_http_requests_total{method="POST",route="/api/v3/crypto/encrypt",status="200"} 1027\n',
        ],
      }),
    },
    problems: {
      401: 'no valid bearer token',
      403: 'the token lacks admin.platform.metrics.read',
    },
    handle: async (ctx, { res }) => {
      res.type(ctx.metrics.registry.contentType).send(await ctx.metrics.registry.metrics());
    },
  }),
];
