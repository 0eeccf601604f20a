/** Platform tenants: create, list, read, suspend, resume. */
import { Router } from 'express';
import type { AppContext } from '../../../../context.ts';
import { route } from '../../../../http/route.ts';
import { pageParams } from '../../../../http/pagination.ts';
import { authorize, actorOf } from '../../../../middleware/authenticate.ts';
import { jsonBody } from '../../../../middleware/body.ts';
import { param, uuidParam } from '../../../../http/params.ts';
import {
  createTenant,
  listTenants,
  readTenant,
  setTenantStatus,
} from '../../../../services/admin/tenants.ts';
import { onlyKnown } from '../../../../../shared/validation/members.ts';

const TENANT_MEMBERS: ReadonlySet<string> = new Set(['name']);

/** Mounted at /api/v3/admin/platform/tenants. */
export function createPlatformTenantsRouter(ctx: AppContext): Router {
  const router = uuidParam(Router(), 'id', 'tenant');
  const json = jsonBody(ctx.config.jsonLimitBytes);
  route(router, '/', {
    get: [
      authorize(ctx, 'admin.platform.tenants.read'),
      async (req, res) => {
        res.json(await listTenants(ctx.db, pageParams(req)));
      },
    ],
    post: [
      authorize(ctx, 'admin.platform.tenants.create'),
      ...json,
      async (req, res) => {
        onlyKnown(req.body ?? {}, TENANT_MEMBERS);
        const tenant = await createTenant(ctx, req.body ?? {});
        ctx.audit.record({
          tenantId: req.auth.tenantId,
          actor: actorOf(req),
          action: 'platform.tenant.create',
          outcome: 'success',
          target: tenant.id,
        });
        ctx.audit.record({
          tenantId: tenant.id,
          actor: actorOf(req),
          action: 'tenant.created',
          outcome: 'success',
          target: tenant.id,
        });
        res.status(201).json(tenant);
      },
    ],
  });
  route(router, '/:id', {
    get: [
      authorize(ctx, 'admin.platform.tenants.read'),
      async (req, res) => {
        res.json(await readTenant(ctx.db, param(req, 'id')));
      },
    ],
  });
  for (const [action, status] of [
    ['suspend', 'suspended'],
    ['resume', 'active'],
  ] as const) {
    route(router, `/:id/${action}`, {
      post: [
        authorize(ctx, 'admin.platform.tenants.suspend'),
        async (req, res) => {
          const tenant = await setTenantStatus(ctx, param(req, 'id'), status);
          ctx.audit.record({
            tenantId: tenant.id,
            actor: actorOf(req),
            action: `tenant.${action}`,
            outcome: 'success',
            target: tenant.id,
          });
          res.json(tenant);
        },
      ],
    });
  }
  return router;
}
