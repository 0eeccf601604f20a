/**
 * GET /metrics, what Prometheus scrapes. It answers only a bearer (core or admin audience)
 * holding admin.platform.metrics.read (a workload token for the scraper, or an
 * administrator's): its series describe every tenant's traffic.
 */
import { Router } from 'express';
import type { AppContext } from '../context.ts';
import { route } from '../http/route.ts';
import { authorize } from '../middleware/authenticate.ts';

/** Mounted at /metrics (after authentication). */
export function createMetricsRouter(ctx: AppContext): Router {
  const router = Router();
  route(router, '/', {
    get: [
      authorize(ctx, 'admin.platform.metrics.read'),
      async (_req, res) => {
        res.type(ctx.metrics.registry.contentType).send(await ctx.metrics.registry.metrics());
      },
    ],
  });
  return router;
}
