/**
 * The Admin API: every path already passed bearer checking with the service-admin audience;
 * tenant-scoped paths also require the path's tenant to be the token's (or cross-tenant power).
 */
import { Router, type RequestParamHandler } from 'express';
import type { AppContext } from '../../context.ts';
import { AppError } from '../../../shared/errors/index.ts';
import { requireTenantAccess } from '../../middleware/authenticate.ts';
import { createPlatformRouter } from '../platform.ts';
import { createPlatformTenantsRouter, createTenantSelfRouter } from './tenants.ts';
import { createWorkloadsRouter } from './workloads.ts';
import { createRolesRouter } from './roles.ts';
import { createUsersRouter } from './users.ts';
import { createPoliciesRouter } from './policies.ts';
import { createKeysRouter } from './keys.ts';
import { createExchangesRouter } from './exchanges.ts';
import { isUuid } from '../../../shared/ids.ts';

/** Routers per tenant-scoped area, mounted under /tenants/:tenantId. */
export type TenantAreaFactory = (ctx: AppContext) => Router;

const TENANT_AREAS: Array<[string, TenantAreaFactory]> = [
  ['/workloads', createWorkloadsRouter],
  ['/roles', createRolesRouter],
  ['/users', createUsersRouter],
  ['/policies', createPoliciesRouter],
  ['/keys', createKeysRouter],
  ['/cryptographic-exchanges', createExchangesRouter],
];


/** Record ids are UUID columns: a malformed one names nothing (404) rather than reaching Postgres as a type error (500). */
const uuidParam = (what: string): RequestParamHandler => (_req, _res, next, value) => (isUuid(String(value)) ? next() : next(new AppError('not_found', `no such ${what}`)));
const withUuidIds = (router: Router, what: string) => {
  router.param('id', uuidParam(what));
  return router;
};

/** Mounted at /api/v3/admin after authentication; `extra` adds areas (keys, keystore, exchanges). */
export function createAdminRouter(ctx: AppContext, extra: Array<[string, TenantAreaFactory]> = []): Router {
  const router = Router();
  router.param('tenantId', uuidParam('tenant'));
  router.use('/platform/tenants', withUuidIds(createPlatformTenantsRouter(ctx), 'tenant'));
  router.use('/platform', createPlatformRouter(ctx));
  const tenant = Router({ mergeParams: true });
  tenant.use(requireTenantAccess(ctx));
  for (const [path, factory] of [...TENANT_AREAS, ...extra]) tenant.use(path, withUuidIds(factory(ctx), 'record'));
  tenant.use('/', createTenantSelfRouter(ctx));
  router.use('/tenants/:tenantId', tenant);
  return router;
}
