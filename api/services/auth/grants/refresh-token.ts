/** The refresh_token grant (RFC 6749 section 6): rotation, and reuse revoking the family. */
import type { AppContext } from '../../../context.ts';
import { OAuthError } from '../../../../shared/errors/index.ts';
import { loadUser } from '../passwords.ts';
import { redeemRefreshToken, refreshFamilyOf } from '../refresh-tokens.ts';
import { rateKey } from '../rate-limits.ts';
import { Workload } from '../../../../shared/db/models/identities.ts';
import { REFRESH_TOKEN_ACTOR, clientActor, userActor } from '../../../../shared/audit/actor.ts';
import { required, type Grant, type TokenResponse } from './grant.ts';
import { humanTokens, legacyTokens } from './tokens.ts';

/** The form parameters this grant reads. */
export const parameters: ReadonlySet<string> = new Set(['refresh_token']);

/**
 * The budget key of a refresh token: its family, so failures of other people's garbage never
 * spend it; a token that names no family spends the budget of its sender's address.
 */
export async function refreshRateKey(
  ctx: AppContext,
  token: string | undefined,
  address: string,
): Promise<string> {
  const family = token ? await refreshFamilyOf(ctx.db, token) : null;
  return family ? rateKey('refresh', family) : rateKey('address', address);
}

/** refresh_token: rotates the refresh token; reuse revokes the family. Keeps the parent's audience. */
export async function refreshTokenGrant(
  ctx: AppContext,
  form: Record<string, string>,
  onlyAudience?: string,
): Promise<TokenResponse> {
  required(form, 'refresh_token');
  const result = await redeemRefreshToken(ctx.db, form.refresh_token, onlyAudience);
  if (!result.ok) {
    const tenantId = result.tenantId ?? (await ctx.auth.platformTenantId());
    ctx.audit.record({
      tenantId,
      actor: REFRESH_TOKEN_ACTOR,
      action:
        result.reason === 'reused' ? 'auth.refresh.reuse-detected' : 'auth.token.refresh_token',
      outcome: 'failure',
      details: { reason: result.reason, familyId: result.familyId },
    });
    if (result.reason === 'reused' && result.familyId) {
      // RFC 9700 4.14.2: the family is compromised; so are the access tokens issued from it.
      await ctx.auth.revokeFamilyTokens(result.familyId, tenantId, 'refresh token reuse');
      ctx.logger.warn(
        { familyId: result.familyId, tenantId },
        'refresh token reuse detected; family and its access tokens revoked',
      );
    }
    throw new OAuthError('invalid_grant', 'the refresh token is not valid');
  }
  const { subject, familyId } = result;
  if (subject.subjectKind === 'user') {
    const user = await loadUser(ctx.db, { id: subject.subjectId });
    if (!user || user.disabled)
      throw new OAuthError('invalid_grant', 'the refresh token is not valid');
    ctx.audit.record({
      tenantId: user.tenantId,
      actor: userActor(user.id),
      action: 'auth.token.refresh_token',
      outcome: 'success',
    });
    return humanTokens(ctx, user, subject.rememberMe, familyId);
  }
  const workload = await Workload.query(ctx.db).findById(subject.subjectId).select('client_id');
  const creds = workload ? await ctx.auth.secrets.lookup(workload.client_id) : null;
  if (!creds || creds.disabled)
    throw new OAuthError('invalid_grant', 'the refresh token is not valid');
  ctx.audit.record({
    tenantId: creds.tenantId,
    actor: clientActor(creds.clientId),
    action: 'auth.token.refresh_token',
    outcome: 'success',
  });
  return legacyTokens(ctx, creds, familyId);
}

export const grant: Grant = {
  parameters,
  rateKey: (ctx, form, address) => refreshRateKey(ctx, form.refresh_token, address),
  run: (ctx, form) => refreshTokenGrant(ctx, form),
};
