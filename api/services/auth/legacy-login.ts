/**
 * The legacy JSON login (`POST /api/authenticate/app`) and its refresh: a workload's client id and
 * secret give a legacy-audience token pair, in the legacy camelCase shape. The budgets are those of
 * the OAuth grants: one workload, one budget, whichever door it knocks on.
 */
import type { AppContext } from '../../context.ts';
import { AUDIENCE_LEGACY } from './access-tokens.ts';
import { authenticateWorkload, clientRateKey } from './client-auth.ts';
import type { TokenResponse } from './grants/grant.ts';
import { refreshRateKey, refreshTokenGrant } from './grants/refresh-token.ts';
import { legacyTokens } from './grants/tokens.ts';
import { withAuthBudget } from './rate-limits.ts';
import { countIssue } from './token-metrics.ts';
import { clientActor } from '../../../shared/audit/actor.ts';

/** The legacy token answer. */
export interface LegacyTokens {
  accessToken: string;
  refreshToken?: string;
  tokenType: 'Bearer';
  expiresIn: number;
}

const legacyShape = (t: TokenResponse): LegacyTokens => ({
  accessToken: t.access_token,
  refreshToken: t.refresh_token,
  tokenType: t.token_type,
  expiresIn: t.expires_in,
});

/** POST /api/authenticate/app: a token pair for the workload's credentials. */
export async function legacyLogin(
  ctx: AppContext,
  input: { clientId: string; clientSecret: string },
  address: string,
): Promise<LegacyTokens> {
  const { clientId, clientSecret } = input;
  const tokens = await countIssue(ctx, 'legacy_login', async () => {
    const key = await clientRateKey(ctx, clientId, address);
    return withAuthBudget(ctx.auth.limits, key, async () => {
      const creds = await authenticateWorkload(ctx, clientId, clientSecret, address);
      ctx.audit.record({
        tenantId: creds.tenantId,
        actor: clientActor(creds.clientId),
        action: 'auth.legacy.login',
        outcome: 'success',
      });
      return legacyTokens(ctx, creds);
    });
  });
  return legacyShape(tokens);
}

/** POST /api/authenticate/refresh: a new pair for a legacy refresh token (legacy ones only). */
export async function legacyRefresh(
  ctx: AppContext,
  input: { refreshToken: string },
  address: string,
): Promise<LegacyTokens> {
  const { refreshToken } = input;
  return legacyShape(
    await countIssue(ctx, 'legacy_refresh', async () => {
      const key = await refreshRateKey(ctx, refreshToken, address);
      return withAuthBudget(ctx.auth.limits, key, () =>
        refreshTokenGrant(ctx, { refresh_token: refreshToken }, AUDIENCE_LEGACY),
      );
    }),
  );
}
