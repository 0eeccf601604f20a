/**
 * Per client, per endpoint rate limit of the bearer APIs: 429 problem with Retry-After.
 * Transport-free: the route rows, the runtime lane's core and Express (api/middleware/
 * rate-limit.ts) all take their point here.
 */
import type { AppContext } from '../context.ts';
import type { AccessClaims } from '../services/auth/access-tokens.ts';
import { problem } from '../../shared/errors/index.ts';
import { isRateLimited, retryAfterSeconds } from '../services/auth/rate-limits.ts';

/** Consumes one point of the caller's budget for `endpoint`, or throws the 429 problem. */
export async function consumeApiBudget(
  ctx: AppContext,
  claims: AccessClaims,
  endpoint: string,
): Promise<void> {
  try {
    await ctx.auth.limits.api.consume(`${claims.client_id}:${claims.tenantId}:${endpoint}`);
  } catch (err) {
    if (isRateLimited(err))
      throw problem('rate_limited', `rate limit of ${endpoint} reached; retry later`, {
        headers: { 'Retry-After': String(retryAfterSeconds(err)) },
      });
    throw err;
  }
}
