/** Liveness and readiness: what an orchestrator polls (GET /healthz, /readyz); public. */
import { Router } from 'express';
import type { AppContext } from '../context.ts';
import { databaseReachable } from '../../shared/db/knex.ts';
import { route } from '../http/route.ts';

const ALIVE = JSON.stringify({ status: 'ok' });

/** Mounted at the root: GET /healthz and /readyz. */
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
  return router;
}
