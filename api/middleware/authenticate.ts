/**
 * Bearer checking for every non-auth endpoint (spec 5, RFC 6750): token verified (cache hit on
 * the hot path, no database), audience by path family (contract 2), then permission and tenant
 * checks per route. 401 and 403 are problems without an `error` member (spec 7.2).
 */
import type { RequestHandler, Request } from 'express';
import type { AppContext } from '../context.ts';
import { problem } from '../../shared/errors/index.ts';
import { isUuid } from '../../shared/ids.ts';
import type { AccessClaims } from '../services/auth/access-tokens.ts';
import { ANONYMOUS_ACTOR, subjectActor } from '../../shared/audit/actor.ts';

declare module 'express-serve-static-core' {
  interface Request {
    auth: AccessClaims;
  }
}

const unauthorized = (detail: string) =>
  problem('unauthorized', detail, { headers: { 'WWW-Authenticate': 'Bearer realm="keyward"' } });

/** What an access check needs to know about the request, whatever serves it. */
export interface AccessAttempt {
  method: string;
  path: string;
  id: string;
}

/**
 * The bearer check itself, transport-free (Express middleware and the runtime lane both call
 * it): the claims of a valid token with one of `audiences`, or a 401 problem; refusals audited.
 */
export async function bearerClaims(
  ctx: AppContext,
  header: string | undefined,
  audiences: readonly string[],
  attempt: AccessAttempt,
): Promise<AccessClaims> {
  // The scheme name is case-insensitive (RFC 7235 2.1, RFC 6750 2.1).
  if (!header || header.length < 8 || header.slice(0, 7).toLowerCase() !== 'bearer ') {
    auditDenied(ctx, attempt, null, 'missing-token');
    throw unauthorized('a bearer token is required');
  }
  const token = header.slice(7).trim();
  const claims = ctx.auth.tokens.verify(token) ?? (await ctx.auth.tokens.verifyFresh(token));
  if (!claims) {
    auditDenied(ctx, attempt, null, 'invalid-token');
    throw unauthorized('the bearer token is invalid, expired or revoked');
  }
  if (!audiences.includes(claims.aud)) {
    auditDenied(ctx, attempt, claims, 'wrong-audience');
    throw unauthorized(`this endpoint does not accept tokens for ${claims.aud}`);
  }
  return claims;
}

/** Throws the 403 problem (audited) unless the claims hold every permission. */
export function requirePermissions(
  ctx: AppContext,
  claims: AccessClaims,
  permissions: readonly string[],
  attempt: AccessAttempt,
): void {
  const missing = permissions.filter((p) => !claims.permissions.includes(p));
  if (missing.length > 0) {
    auditDenied(ctx, attempt, claims, 'missing-permission', missing);
    throw problem(
      'forbidden',
      `the token's role lacks ${missing.join(', ')}; widen the role and reissue the token`,
    );
  }
}

/**
 * Any one of `anyOf` is enough (a full permission or one of its narrower siblings, such as
 * `admin.humanuser` or `admin.humanuser.read`); a refusal names the first, the full one.
 */
export function requireAnyPermission(
  ctx: AppContext,
  claims: AccessClaims,
  anyOf: readonly string[],
  attempt: AccessAttempt,
): void {
  if (anyOf.some((p) => claims.permissions.includes(p))) return;
  requirePermissions(ctx, claims, anyOf.slice(0, 1), attempt);
}

/** The access attempt of an Express request, for the audit of a refusal. */
export const attemptOf = (req: Request): AccessAttempt => ({
  method: req.method,
  path: `${req.baseUrl}${req.path}`,
  id: req.id,
});

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
    const tenantId = String(req.params[param] ?? '');
    if (
      tenantId !== req.auth.tenantId &&
      !req.auth.permissions.includes('admin.platform.cross-tenant')
    ) {
      auditDenied(ctx, attemptOf(req), req.auth, 'other-tenant');
      throw problem('forbidden', 'the token belongs to another tenant');
    }
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

/** Records a refused access attempt in the caller's tenant, or the platform's when unknown. */
function auditDenied(
  ctx: AppContext,
  attempt: AccessAttempt,
  claims: AccessClaims | null,
  reason: string,
  missing?: string[],
): void {
  const record = (tenantId: string) =>
    ctx.audit.record({
      tenantId,
      actor: claims ? subjectActor(claims) : ANONYMOUS_ACTOR,
      action: 'access',
      outcome: 'denied',
      target: `${attempt.method} ${attempt.path}`.slice(0, 512),
      details: { reason, ...(missing ? { missing } : {}), requestId: attempt.id },
    });
  if (claims) record(claims.tenantId);
  else ctx.auth.platformTenantId().then(record, () => undefined);
}

/** The audit actor of an authenticated request. */
export function actorOf(req: Request): string {
  return subjectActor(req.auth);
}
