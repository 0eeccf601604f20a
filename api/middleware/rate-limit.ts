/** The Express side of the per client, per endpoint rate limit (api/access/budget.ts). */
import type { RequestHandler } from 'express';
import type { AppContext } from '../context.ts';
import { consumeApiBudget } from '../access/budget.ts';

/** The Express middleware over consumeApiBudget. */
export function apiRateLimit(ctx: AppContext, endpoint: string): RequestHandler {
  return async (req, _res, next) => {
    await consumeApiBudget(ctx, req.auth, endpoint);
    next();
  };
}
