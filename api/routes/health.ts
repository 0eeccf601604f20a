/**
 * Liveness and readiness: what an orchestrator polls (GET /healthz, /readyz); public.
 *
 * Tests: test/integration/http/system-endpoints.test.ts,
 *   test/integration/http/slow-clients.test.ts, test/integration/admin/openapi.test.ts,
 *   test/integration/lifecycle.test.ts, test/integration/observability/access-log-shutdown.test.ts,
 *   test/integration/core/expensive-routes.test.ts, and 9 more under test/integration/
 */
import Type from 'typebox';
import { endpoint } from '../rows/endpoint.ts';
import { Resource } from '../schemas/common.ts';
import { databaseReachable } from '../../shared/db/knex.ts';

const OPEN = { open: 'an orchestrator polls it without credentials' } as const;

const Readiness = (example: unknown) =>
  Resource(
    {
      status: Type.Enum(['ready', 'not-ready']),
      checks: Type.Object(
        {},
        {
          description: 'database, pool, and redis when REDIS_URL is set',
          additionalProperties: Type.Boolean(),
        },
      ),
    },
    example,
  );

/** Mounted at the root: GET /healthz and /readyz. */
export const HEALTH_ENDPOINTS = [
  endpoint({
    method: 'get',
    path: '/healthz',
    operationId: 'liveness',
    tag: 'system',
    summary: 'Liveness: the process answers',
    access: OPEN,
    answer: {
      status: 200,
      description: 'alive',
      schema: Resource({ status: Type.Literal('ok') }, { status: 'ok' }),
    },
    handle: () => ({ status: 'ok' as const }),
  }),
  endpoint({
    method: 'get',
    path: '/readyz',
    operationId: 'readiness',
    tag: 'system',
    summary: 'Readiness: database, worker pool and Redis when configured',
    access: OPEN,
    answer: {
      status: 200,
      description: 'ready',
      schema: Readiness({ status: 'ready', checks: { database: true, pool: true, redis: true } }),
    },
    otherAnswers: [
      {
        status: 503,
        description: 'a dependency is down',
        schema: Readiness({
          status: 'not-ready',
          checks: { database: true, pool: true, redis: false },
        }),
      },
    ],
    handle: async (ctx, { res }) => {
      const checks: Record<string, boolean> = {
        database: await databaseReachable(ctx.db),
        pool: ctx.pool.open(),
      };
      if (ctx.redis) checks.redis = ctx.redis.status === 'ready';
      const ready = Object.values(checks).every(Boolean);
      res.status(ready ? 200 : 503);
      return { status: ready ? 'ready' : 'not-ready', checks };
    },
  }),
];
