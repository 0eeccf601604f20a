/** Roles of a tenant: a name and a permission list from the catalogue. */
import { Router } from 'express';
import type { AppContext } from '../../../../context.ts';
import { route } from '../../../../http/route.ts';
import { pageParams } from '../../../../http/pagination.ts';
import { auditChange, param, tenantParam, uuidParam } from '../../../../http/params.ts';
import { actorOf, authorize } from '../../../../middleware/authenticate.ts';
import { jsonBody } from '../../../../middleware/body.ts';
import {
  createRole,
  deleteRole,
  findRole,
  listRoles,
  roleView,
  updateRole,
} from '../../../../services/admin/roles.ts';
import { onlyKnown } from '../../../../../shared/validation/members.ts';

const ROLE_MEMBERS: ReadonlySet<string> = new Set(['name', 'permissions']);

/** Mounted at /api/v3/admin/tenants/:tenantId/roles. */
export function createRolesRouter(ctx: AppContext): Router {
  const router = uuidParam(Router({ mergeParams: true }), 'id', 'record');
  const json = jsonBody(ctx.config.jsonLimitBytes);
  route(router, '/', {
    get: [
      authorize(ctx, 'admin.roles.read'),
      async (req, res) => {
        res.json(await listRoles(ctx.db, tenantParam(req), pageParams(req)));
      },
    ],
    post: [
      authorize(ctx, 'admin.roles.create'),
      ...json,
      async (req, res) => {
        onlyKnown(req.body ?? {}, ROLE_MEMBERS);
        const role = await createRole(ctx, tenantParam(req), req.body ?? {});
        auditChange(ctx, req, 'role.create', role.id, { permissions: role.permissions });
        res.status(201).json(role);
      },
    ],
  });
  route(router, '/:id', {
    get: [
      authorize(ctx, 'admin.roles.read'),
      async (req, res) => {
        res.json(roleView(await findRole(ctx.db, tenantParam(req), param(req, 'id'))));
      },
    ],
    patch: [
      authorize(ctx, 'admin.roles.update'),
      ...json,
      async (req, res) => {
        onlyKnown(req.body ?? {}, ROLE_MEMBERS);
        const { name, permissions } = req.body ?? {};
        const role = await updateRole(
          ctx,
          tenantParam(req),
          param(req, 'id'),
          { name, permissions },
          actorOf(req),
        );
        auditChange(
          ctx,
          req,
          'role.update',
          role.id,
          permissions !== undefined ? { permissions } : undefined,
        );
        res.json(role);
      },
    ],
    delete: [
      authorize(ctx, 'admin.roles.delete'),
      async (req, res) => {
        await deleteRole(ctx.db, tenantParam(req), param(req, 'id'));
        auditChange(ctx, req, 'role.delete', param(req, 'id'));
        res.status(204).end();
      },
    ],
  });
  return router;
}
