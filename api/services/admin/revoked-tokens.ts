/** Platform token operations: force revocation by jti or token, and the list of revoked tokens still unexpired. */
import type { AppContext } from '../../context.ts';
import { problem } from '../../../shared/errors/index.ts';
import { RevokedToken } from '../../../shared/db/models/tokens.ts';
import type {
  ForceRevokeBody,
  RevokedTokensQueryValue,
  RevokedTokenView,
} from '../../schemas/revoked-tokens.ts';

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;

/** A jti as this service issues them: 1 to 128 characters, no control character, well-formed UTF-16. */
const isJti = (v: unknown): v is string =>
  typeof v === 'string' && v.length > 0 && v.length <= 128 && !CONTROL.test(v) && v.isWellFormed();

/** Who force-revokes: the audit actor and the tenant whose chain records it (the caller's). */
export interface Revoker {
  actor: string;
  tenantId: string;
}

/**
 * Revokes a token named by itself (its claims give tenant, subject and expiry; an invalid token
 * revokes nothing) or by a bare jti, kept for the longest lifetime a token can have. A
 * revocation is audited in the revoker's chain, naming the token's tenant; nothing revoked,
 * nothing recorded.
 */
export async function forceRevoke(
  ctx: AppContext,
  input: ForceRevokeBody,
  by: Revoker,
): Promise<{ revoked: boolean; jti: string | null }> {
  let target: { jti: string; tenantId: string | null; sub: string | null; exp: Date } | null = null;
  if (input.token !== undefined) {
    const claims = await ctx.auth.tokens.verifyFresh(input.token);
    if (claims)
      target = {
        jti: claims.jti,
        tenantId: claims.tenantId,
        sub: claims.sub,
        exp: new Date(claims.exp * 1000),
      };
  } else if (input.jti !== undefined && isJti(input.jti)) {
    target = {
      jti: input.jti,
      tenantId: null,
      sub: null,
      exp: new Date(Date.now() + ctx.auth.maxTokenLifetime * 1000),
    };
  } else {
    throw problem('validation_failed', 'give `jti` or `token`');
  }
  if (!target) return { revoked: false, jti: null };
  const reason = input.reason?.slice(0, 200) ?? 'force-revoke';
  await ctx.auth.revocation.revoke({
    jti: target.jti,
    tenantId: target.tenantId,
    sub: target.sub,
    expiresAt: target.exp,
    revokedBy: by.actor,
    reason,
  });
  ctx.audit.record({
    tenantId: by.tenantId,
    actor: by.actor,
    action: 'platform.token.force-revoke',
    outcome: 'success',
    target: target.jti,
    details: { tokenTenant: target.tenantId },
  });
  return { revoked: true, jti: target.jti };
}

/**
 * One page of unexpired revocations ordered by jti, from the query's `limit` (clamped to 1..500,
 * 100 when unreadable) and `cursor` (the last jti of the previous page, as issued).
 */
export async function listRevokedTokens(
  ctx: Pick<AppContext, 'db'>,
  query: RevokedTokensQueryValue,
): Promise<{ items: RevokedTokenView[]; nextCursor: string | null }> {
  const limit = Math.min(Math.max(query.limit || 100, 1), 500);
  const cursor = query.cursor || null;
  // The cursor is a jti this endpoint issued: a NUL reached the database, which refuses it in a text comparison (a 500 before).
  if (cursor !== null && !isJti(cursor))
    throw problem('validation_failed', 'cursor is not one this endpoint issued');
  const q = RevokedToken.query(ctx.db)
    .where('expires_at', '>', new Date())
    .orderBy('jti')
    .limit(limit + 1);
  if (cursor) q.where('jti', '>', cursor);
  const rows = await q;
  const items = rows.slice(0, limit).map((r) => ({
    jti: r.jti,
    tenantId: r.tenant_id,
    sub: r.sub,
    expiresAt: new Date(r.expires_at).toISOString(),
    revokedAt: new Date(r.revoked_at).toISOString(),
    revokedBy: r.revoked_by,
    reason: r.reason,
  }));
  return { items, nextCursor: rows.length > limit ? items[items.length - 1].jti : null };
}
