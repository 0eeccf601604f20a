/** Roles of a tenant: a name and a permission list from the catalogue. */
import { Router } from 'express';
import type { AppContext } from '../../context.ts';
import { AppError } from '../../../shared/errors/index.ts';
import { isPermission, isPlatformPermission } from '../../../shared/permissions.ts';
import { route } from '../../http/route.ts';
import { paginate } from '../../http/pagination.ts';
import { auditChange, param, tenantParam } from '../../http/params.ts';
import { actorOf, authorize } from '../../middleware/authenticate.ts';
import { jsonColumn } from '../../../shared/db/knex.ts';
import { jsonBody } from '../../middleware/body.ts';
import { createRole, roleView } from '../../services/identities.ts';
import { onlyKnown } from '../../../shared/validation/members.ts';

const ROLE_MEMBERS: ReadonlySet<string> = new Set(['name', 'permissions']);

/** Mounted at /api/v3/admin/tenants/:tenantId/roles. */
export function createRolesRouter(ctx: AppContext): Router {
  const router = Router({ mergeParams: true });
  const json = jsonBody(ctx.config.jsonLimitBytes);
  const find = async (tenantId: string, id: string) => {
    const row = await ctx.db('roles').where({ id, tenant_id: tenantId }).first();
    if (!row) throw new AppError('not_found', 'no such role');
    return row;
  };
  route(router, '/', {
    get: [authorize(ctx, 'admin.roles.read'), async (req, res) => {
      res.json(await paginate(ctx.db('roles').where({ tenant_id: tenantParam(req) }), 'id', req, roleView));
    }],
    post: [authorize(ctx, 'admin.roles.create'), ...json, async (req, res) => {
      onlyKnown(req.body ?? {}, ROLE_MEMBERS);
      const role = await createRole(ctx, tenantParam(req), req.body ?? {});
      auditChange(ctx, req, 'role.create', role.id, { permissions: role.permissions });
      res.status(201).json(role);
    }],
  });
  route(router, '/:id', {
    get: [authorize(ctx, 'admin.roles.read'), async (req, res) => {
      res.json(roleView(await find(tenantParam(req), param(req, 'id'))));
    }],
    patch: [authorize(ctx, 'admin.roles.update'), ...json, async (req, res) => {
      onlyKnown(req.body ?? {}, ROLE_MEMBERS);
      const role = await find(tenantParam(req), param(req, 'id'));
      const { permissions, name } = req.body ?? {};
      const update: Record<string, unknown> = {};
      if (name !== undefined) {
        if (typeof name !== 'string' || !name.trim()) throw new AppError('validation_failed', 'name must be a non-empty string');
        update.name = name.trim();
      }
      if (permissions !== undefined) {
        if (!Array.isArray(permissions) || !permissions.every((p) => typeof p === 'string' && isPermission(p))) throw new AppError('validation_failed', 'permissions must be catalogue strings');
        const tenant = await ctx.db('tenants').where({ id: tenantParam(req) }).first();
        if (!tenant.is_platform && permissions.some(isPlatformPermission)) throw new AppError('validation_failed', 'a tenant role cannot hold admin.platform.* permissions');
        update.permissions = JSON.stringify([...new Set(permissions)]);
      }
      const [row] = await ctx.db('roles').where({ id: role.id }).update(update).returning('*');
      const before = jsonColumn<string[]>(role.permissions);
      if (Array.isArray(permissions) && before.some((p) => !permissions.includes(p))) {
        // Narrowed: outstanding tokens carry the removed permissions; end them on every instance.
        await ctx.auth.revokeRoleTokens(role.tenant_id, role.id, actorOf(req));
      } else {
        // Workload credentials (with their permissions) are cached briefly; drop those of this role.
        for (const w of await ctx.db('workloads').where({ role_id: role.id }).select('client_id')) await ctx.auth.secrets.invalidate(w.client_id);
      }
      auditChange(ctx, req, 'role.update', role.id, update.permissions ? { permissions } : undefined);
      res.json(roleView(row));
    }],
    delete: [authorize(ctx, 'admin.roles.delete'), async (req, res) => {
      const role = await find(tenantParam(req), param(req, 'id'));
      const used = (await ctx.db('workloads').where({ role_id: role.id }).first('id')) ?? (await ctx.db('users').where({ role_id: role.id }).first('id'));
      if (used) throw new AppError('conflict', 'the role is assigned to workloads or users; reassign them first');
      await ctx.db('roles').where({ id: role.id }).delete();
      auditChange(ctx, req, 'role.delete', role.id);
      res.status(204).end();
    }],
  });
  return router;
}
