/**
 * The access checks of every non-auth endpoint (RFC 6750), transport-free: Express
 * (api/middleware/authenticate.ts), the route rows and the runtime lane all call these. The
 * token verified (cache hit on the hot path, no database), audience by path family (contract
 * 2), then permission and tenant checks per route; every refusal audited. 401 and 403 are
 * problems without an `error` member.
 */
import type { AppContext } from '../context.ts';
import { problem } from '../../shared/errors/index.ts';
import { bearerToken, type AccessClaims } from '../services/auth/access-tokens.ts';
import { ANONYMOUS_ACTOR, subjectActor } from '../../shared/audit/actor.ts';

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
  const token = bearerToken(header);
  if (token === null) {
    auditDenied(ctx, attempt, null, 'missing-token');
    throw unauthorized('a bearer token is required');
  }
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

/** Throws the 403 problem (audited) unless `tenantId` is the token's, or the caller holds cross-tenant platform power. */
export function requireTenant(
  ctx: AppContext,
  claims: AccessClaims,
  tenantId: string,
  attempt: AccessAttempt,
): void {
  if (tenantId === claims.tenantId || claims.permissions.includes('admin.platform.cross-tenant'))
    return;
  auditDenied(ctx, attempt, claims, 'other-tenant');
  throw problem('forbidden', 'the token belongs to another tenant');
}

/** What {@link attemptOf} reads of a request routed by Express. */
interface RoutedRequest {
  method: string;
  baseUrl: string;
  path: string;
  id: string;
}

/** The access attempt of a routed (Express) request, for the audit of a refusal. */
export const attemptOf = (req: RoutedRequest): AccessAttempt => ({
  method: req.method,
  path: `${req.baseUrl}${req.path}`,
  id: req.id,
});

/** The audit actor of an authenticated request. */
export function actorOf(req: { auth: AccessClaims }): string {
  return subjectActor(req.auth);
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
