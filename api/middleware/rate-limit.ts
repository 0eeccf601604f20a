/** Per client, per endpoint rate limit of the bearer APIs (spec 8): 429 problem with Retry-After. */
import type { RequestHandler } from 'express';
import type { AppContext } from '../context.ts';
import { AppError } from '../../shared/errors/index.ts';
import { isRateLimited, retryAfterSeconds } from '../services/auth/rate-limits.ts';

/** Consumes one point of the caller's budget for `endpoint`. */
export function apiRateLimit(ctx: AppContext, endpoint: string): RequestHandler {
  return async (req, _res, next) => {
    try {
      await ctx.auth.limits.api.consume(`${req.auth.client_id}:${req.auth.tenantId}:${endpoint}`);
    } catch (err) {
      if (isRateLimited(err)) throw new AppError('rate_limited', `rate limit of ${endpoint} reached; retry later`, { headers: { 'Retry-After': String(retryAfterSeconds(err)) } });
      throw err;
    }
    next();
  };
}
