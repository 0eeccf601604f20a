/**
 * Liveness, readiness and metrics: what an orchestrator and Prometheus poll. /metrics answers
 * only a bearer holding admin.platform.metrics.read (a workload token for the scraper, or an
 * administrator's): its series describe every tenant's traffic.
 */
import { Router } from 'express';
import type { AppContext } from '../context.ts';
import { databaseReachable } from '../../shared/db/knex.ts';
import { route } from '../http/route.ts';
import { authenticate, authorize } from '../middleware/authenticate.ts';
import { AUDIENCE_ADMIN, AUDIENCE_CORE } from '../services/auth/access-tokens.ts';

const ALIVE = JSON.stringify({ status: 'ok' });

/** GET /healthz, /readyz, /metrics. */
export function createHealthRouter(ctx: AppContext): Router {
  const router = Router();
  route(router, '/healthz', {
    get: (_req, res) => {
      res.type('application/json').send(ALIVE);
    },
  });
  route(router, '/readyz', {
    get: async (_req, res) => {
      const checks: Record<string, boolean> = {
        database: await databaseReachable(ctx.db),
        pool: ctx.pool.open(),
      };
      if (ctx.redis) checks.redis = ctx.redis.status === 'ready';
      const ready = Object.values(checks).every(Boolean);
      res.status(ready ? 200 : 503).json({ status: ready ? 'ready' : 'not-ready', checks });
    },
  });
  route(router, '/metrics', {
    get: [authenticate(ctx, [AUDIENCE_CORE, AUDIENCE_ADMIN]), authorize(ctx, 'admin.platform.metrics.read'), async (_req, res) => {
      res.type(ctx.metrics.registry.contentType).send(await ctx.metrics.registry.metrics());
    }],
  });
  return router;
}
