/**
 * The audit log of a tenant for the people who run it (the console): the events, the
 * verification of the chain and its head, as on /api/v3/audit but with the tenant in the path
 * and a service-admin token, like the rest of the Admin API (contract 2: the audit API itself
 * stays service-core). A platform administrator with cross-tenant power reads any tenant's.
 */
import { Router } from 'express';
import type { AppContext } from '../../../../context.ts';
import { readHead, verifyChain } from '../../../../../shared/audit/verify.ts';
import { listEvents, readEventFilter, readVerifyRange } from '../../../../services/audit-query.ts';
import { route } from '../../../../http/route.ts';
import { tenantParam } from '../../../../http/params.ts';
import { authorize } from '../../../../middleware/authenticate.ts';
import { jsonBody } from '../../../../middleware/body.ts';

/** Mounted at /api/v3/admin/tenants/:tenantId/audit. */
export function createTenantAuditRouter(ctx: AppContext): Router {
  const router = Router({ mergeParams: true });
  route(router, '/events', {
    get: [
      authorize(ctx, 'audit.events.read'),
      async (req, res) => {
        const filter = readEventFilter(req.query);
        // Events still buffered in this process are written first, so the caller reads its own.
        await ctx.audit.flush();
        res.json(await listEvents(ctx.db, tenantParam(req), filter));
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
        res.json(await verifyChain(ctx.db, tenantParam(req), fromSeq, toSeq));
      },
    ],
  });
  route(router, '/head', {
    get: [
      authorize(ctx, 'audit.verify'),
      async (req, res) => {
        await ctx.audit.flush();
        res.json(await readHead(ctx.db, tenantParam(req)));
      },
    ],
  });
  return router;
}
