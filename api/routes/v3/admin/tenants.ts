/** GET /api/v3/admin/tenants/{tenantId}: a tenant's own record. */
import { Router } from 'express';
import type { AppContext } from '../../../context.ts';
import { route } from '../../../http/route.ts';
import { authorize } from '../../../middleware/authenticate.ts';
import { param } from '../../../http/params.ts';
import { readTenant } from '../../../services/admin/tenants.ts';

/** Mounted at /api/v3/admin/tenants/:tenantId (after the tenant-scope check of the route table). */
export function createTenantSelfRouter(ctx: AppContext): Router {
  const router = Router({ mergeParams: true });
  route(router, '/', {
    get: [
      authorize(ctx, 'admin.tenant.read'),
      async (req, res) => {
        res.json(await readTenant(ctx.db, param(req, 'tenantId')));
      },
    ],
  });
  return router;
}
