/**
 * The token endpoints of the Auth API: issuing (RFC 6749 3.2), revocation
 * (RFC 7009) and introspection (RFC 7662). Plain values in, the response body out; failures are
 * OAuthErrors, which the route renders in the OAuth shape.
 */
import type { AppContext } from '../../context.ts';
import { OAuthError } from '../../../shared/errors/index.ts';
import { basicClientAuth, clientAuthOf, type ClientAuth } from './client-auth.ts';
import { GRANTS } from './grants/index.ts';
import type { Grant, TokenResponse } from './grants/grant.ts';
import { withAuthBudget } from './rate-limits.ts';
import { revokeRefreshFamily } from './refresh-tokens.ts';
import { countIssue } from './token-metrics.ts';
import { REFRESH_TOKEN_ACTOR, subjectActor } from '../../../shared/audit/actor.ts';

/** A token request as the endpoint received it. */
export interface TokenRequest {
  form: Record<string, string>;
  /** The Authorization header, when sent (HTTP Basic client authentication). */
  authorization: string | undefined;
  /** The client address: the key of per-address budgets. */
  address: string;
}

/** The grant_type names a grant this service knows (a Map lookup: no request value reaches a prototype). */
function knownGrant(form: Record<string, string>): Grant {
  if (!form.grant_type) throw new OAuthError('invalid_request', 'grant_type is required');
  const grant = GRANTS.get(form.grant_type);
  if (!grant)
    throw new OAuthError(
      'unsupported_grant_type',
      `grant_type ${form.grant_type.slice(0, 80)} is not supported`,
    );
  return grant;
}

/** Client authentication: form fields or HTTP Basic (client_secret_basic, RFC 6749 2.3.1), one of them. */
function clientOf(grant: Grant, req: TokenRequest): ClientAuth | null {
  if (grant.authenticatesClient) return clientAuthOf(req.authorization, req.form);
  // Never ignored: a caller must not believe credentials were checked when they were not.
  if (basicClientAuth(req.authorization))
    throw new OAuthError(
      'invalid_request',
      `grant_type ${req.form.grant_type} does not authenticate a client; send no Basic credentials`,
    );
  return null;
}

/**
 * POST /token, in steps (node-oidc-provider style): the grant is known → the client is read →
 * the rate gate is keyed on the canonical identity → the grant runs inside that budget.
 */
export async function issueToken(ctx: AppContext, req: TokenRequest): Promise<TokenResponse> {
  // The label is a grant this service knows, never the client's string.
  const name = GRANTS.has(req.form.grant_type ?? '') ? req.form.grant_type : 'unknown';
  return countIssue(ctx, name, async () => {
    const grant = knownGrant(req.form);
    const client = clientOf(grant, req);
    const key = await grant.rateKey(ctx, req.form, req.address, client);
    return withAuthBudget(ctx.auth.limits, key, () =>
      grant.run(ctx, req.form, req.address, client),
    );
  });
}

/**
 * RFC 7009: revokes an access token (by its jti, until it expires) or a refresh token (its whole
 * family, and the access tokens issued from it, 2.1). Unknown tokens revoke nothing; the caller
 * answers 200 either way (2.2).
 */
export async function revokePresentedToken(
  ctx: AppContext,
  token: string | undefined,
): Promise<void> {
  if (!token) return;
  const claims = await ctx.auth.tokens.verifyFresh(token);
  if (claims) {
    await ctx.auth.revocation.revoke({
      jti: claims.jti,
      tenantId: claims.tenantId,
      sub: claims.sub,
      expiresAt: new Date(claims.exp * 1000),
      revokedBy: claims.sub,
      reason: 'rfc7009',
    });
    ctx.audit.record({
      tenantId: claims.tenantId,
      actor: subjectActor(claims),
      action: 'auth.token.revoke',
      outcome: 'success',
      target: claims.jti,
    });
  } else if (token.startsWith('rt_')) {
    const family = await revokeRefreshFamily(ctx.db, token);
    if (!family) return;
    await ctx.auth.revokeFamilyTokens(family.familyId, family.tenantId, 'rfc7009');
    ctx.audit.record({
      tenantId: family.tenantId,
      actor: REFRESH_TOKEN_ACTOR,
      action: 'auth.refresh.revoke',
      outcome: 'success',
      target: family.familyId,
    });
  }
}
