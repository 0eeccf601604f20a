/** Platform tenants (create, list, read, suspend, resume) and a tenant's own record. */
import { Router } from 'express';
import type { AppContext } from '../../context.ts';
import { AppError } from '../../../shared/errors/index.ts';
import { route } from '../../http/route.ts';
import { paginate } from '../../http/pagination.ts';
import { authorize, actorOf } from '../../middleware/authenticate.ts';
import { jsonBody } from '../../middleware/body.ts';
import { param } from '../../http/params.ts';
import { createTenant, tenantView } from '../../services/identities.ts';
import { onlyKnown } from '../../../shared/validation/members.ts';

const TENANT_MEMBERS: ReadonlySet<string> = new Set(['name']);

/** Mounted at /api/v3/admin/platform/tenants. */
export function createPlatformTenantsRouter(ctx: AppContext): Router {
  const router = Router();
  const json = jsonBody(ctx.config.jsonLimitBytes);
  route(router, '/', {
    get: [authorize(ctx, 'admin.platform.tenants.read'), async (req, res) => {
      res.json(await paginate(ctx.db('tenants').select('*'), 'id', req, tenantView));
    }],
    post: [authorize(ctx, 'admin.platform.tenants.create'), ...json, async (req, res) => {
      onlyKnown(req.body ?? {}, TENANT_MEMBERS);
      const tenant = await createTenant(ctx, req.body ?? {});
      ctx.audit.record({ tenantId: req.auth.tenantId, actor: actorOf(req), action: 'platform.tenant.create', outcome: 'success', target: tenant.id });
      ctx.audit.record({ tenantId: tenant.id, actor: actorOf(req), action: 'tenant.created', outcome: 'success', target: tenant.id });
      res.status(201).json(tenant);
    }],
  });
  route(router, '/:id', {
    get: [authorize(ctx, 'admin.platform.tenants.read'), async (req, res) => {
      const row = await ctx.db('tenants').where({ id: param(req, 'id') }).first();
      if (!row) throw new AppError('not_found', 'no such tenant');
      res.json(tenantView(row));
    }],
  });
  for (const [action, status] of [['suspend', 'suspended'], ['resume', 'active']] as const) {
    route(router, `/:id/${action}`, {
      post: [authorize(ctx, 'admin.platform.tenants.suspend'), async (req, res) => {
        const rows = await ctx.db('tenants').where({ id: param(req, 'id'), is_platform: false }).update({ status }).returning('*');
        if (rows.length === 0) throw new AppError('not_found', 'no such tenant (the platform tenant cannot be suspended)');
        // Workload credentials are cached for a few seconds; drop them so the change bites now.
        for (const w of await ctx.db('workloads').where({ tenant_id: param(req, 'id') }).select('client_id')) await ctx.auth.secrets.invalidate(w.client_id);
        await ctx.auth.revocation.tenantChanged(param(req, 'id'));
        ctx.audit.record({ tenantId: param(req, 'id'), actor: actorOf(req), action: `tenant.${action}`, outcome: 'success', target: param(req, 'id') });
        res.json(tenantView(rows[0]));
      }],
    });
  }
  return router;
}

/** Mounted at /api/v3/admin/tenants/:tenantId (the tenant itself). */
export function createTenantSelfRouter(ctx: AppContext): Router {
  const router = Router({ mergeParams: true });
  route(router, '/', {
    get: [authorize(ctx, 'admin.tenant.read'), async (req, res) => {
      const row = await ctx.db('tenants').where({ id: param(req, 'tenantId') }).first();
      if (!row) throw new AppError('not_found', 'no such tenant');
      res.json(tenantView(row));
    }],
  });
  return router;
}
