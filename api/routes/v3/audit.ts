/**
 * The Audit API: the tenant's events (time range, actor, action, outcome, cursor pagination),
 * verification of the hash chain over a range (first broken link, or truncation against the
 * recorded head), and the head itself, for a tenant to anchor outside the service.
 */
import { Router } from 'express';
import type { AppContext } from '../../context.ts';
import { readHead, verifyChain } from '../../../shared/audit/verify.ts';
import { listEvents, readEventFilter, readVerifyRange } from '../../services/audit-query.ts';
import { route } from '../../http/route.ts';
import { authorize } from '../../middleware/authenticate.ts';
import { jsonBody } from '../../middleware/body.ts';

/** Mounted at /api/v3/audit (after service-core authentication). */
export function createAuditRouter(ctx: AppContext): Router {
  const router = Router();
  route(router, '/events', {
    get: [
      authorize(ctx, 'audit.events.read'),
      async (req, res) => {
        const filter = readEventFilter(req.query);
        // Events still buffered in this process are written first, so the caller reads its own.
        await ctx.audit.flush();
        res.json(await listEvents(ctx.db, req.auth.tenantId, filter));
      },
    ],
  });
  route(router, '/verify', {
    post: [
      authorize(ctx, 'audit.verify'),
      ...jsonBody(ctx.config.jsonLimitBytes),
      async (req, res) => {
        const { fromSeq, toSeq } = readVerifyRange(req.body ?? {});
        await ctx.audit.flush();
        res.json(await verifyChain(ctx.db, req.auth.tenantId, fromSeq, toSeq));
      },
    ],
  });
  route(router, '/head', {
    // The same permission as verify: the head is what a verifier anchors elsewhere.
    get: [
      authorize(ctx, 'audit.verify'),
      async (req, res) => {
        await ctx.audit.flush();
        res.json(await readHead(ctx.db, req.auth.tenantId));
      },
    ],
  });
  return router;
}
