/**
 * The Express side of the access checks (api/access/checks.ts): the area's bearer check puts
 * the claims on `req.auth`, then the tenant check of the tenant-scoped admin paths.
 */
import type { RequestHandler } from 'express';
import type { AppContext } from '../context.ts';
import { problem } from '../../shared/errors/index.ts';
import { isUuid } from '../../shared/ids.ts';
import type { AccessClaims } from '../services/auth/access-tokens.ts';
import { attemptOf, bearerClaims, requireTenant } from '../access/checks.ts';

declare module 'express-serve-static-core' {
  interface Request {
    auth: AccessClaims;
  }
}

/** Verifies the bearer token and that its audience is one of `audiences`. */
export function authenticate(ctx: AppContext, audiences: readonly string[]): RequestHandler {
  return async (req, _res, next) => {
    req.auth = await bearerClaims(ctx, req.headers.authorization, audiences, attemptOf(req));
    next();
  };
}

/** Tenant in the path must be the token's tenant, unless the caller holds cross-tenant platform power. */
export function requireTenantAccess(ctx: AppContext, param = 'tenantId'): RequestHandler {
  return (req, _res, next) => {
    requireTenant(ctx, req.auth, String(req.params[param] ?? ''), attemptOf(req));
    next();
  };
}

/**
 * The tenant scope of a tenant-scoped admin path: a :tenantId that is not a UUID names no
 * tenant (404, never a Postgres type error), then the tenant must be the token's.
 */
export function tenantScope(ctx: AppContext): RequestHandler[] {
  const notUuid: RequestHandler = (req, _res, next) =>
    isUuid(String(req.params.tenantId ?? ''))
      ? next()
      : next(problem('not_found', 'no such tenant'));
  return [notUuid, requireTenantAccess(ctx)];
}
