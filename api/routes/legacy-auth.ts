/** The legacy JSON login of spec 4.2 (`POST /api/authenticate/app`) and its refresh call. */
import express, { Router } from 'express';
import type { AppContext } from '../context.ts';
import { OAuthError } from '../../shared/errors/index.ts';
import { route } from '../http/route.ts';
import { authenticateWorkload, clientRateKey, legacyTokens, refreshRateKey, refreshTokenGrant, type TokenResponse } from '../services/auth/grants.ts';
import { withAuthBudget } from '../services/auth/rate-limits.ts';
import { AUDIENCE_LEGACY } from '../services/auth/access-tokens.ts';

const legacyShape = (t: TokenResponse) => ({ accessToken: t.access_token, refreshToken: t.refresh_token, tokenType: t.token_type, expiresIn: t.expires_in });

const jsonOnly = [
  express.json({ limit: '16kb' }),
  (req: express.Request, _res: express.Response, next: express.NextFunction) => {
    if (!req.is('application/json') || !req.body || typeof req.body !== 'object') throw new OAuthError('invalid_request', 'the body must be a JSON object');
    next();
  },
];

/** Router for /api/authenticate/*. */
export function createLegacyAuthRouter(ctx: AppContext): Router {
  const router = Router();
  route(router, '/api/authenticate/app', {
    post: [...jsonOnly, async (req, res) => {
      const { clientId, clientSecret } = req.body as Record<string, unknown>;
      if (typeof clientId !== 'string' || typeof clientSecret !== 'string') throw new OAuthError('invalid_request', 'clientId and clientSecret are required strings');
      // The same budgets as client_credentials: one workload, one budget, whichever door it knocks on.
      const tokens = await withAuthBudget(ctx.auth.limits, clientRateKey(clientId), async () => {
        const creds = await authenticateWorkload(ctx, clientId, clientSecret);
        ctx.audit.record({ tenantId: creds.tenantId, actor: `client:${creds.clientId}`, action: 'auth.legacy.login', outcome: 'success' });
        return legacyTokens(ctx, creds);
      });
      res.setHeader('Cache-Control', 'no-store');
      res.json(legacyShape(tokens));
    }],
  });
  route(router, '/api/authenticate/refresh', {
    post: [...jsonOnly, async (req, res) => {
      const { refreshToken } = req.body as Record<string, unknown>;
      if (typeof refreshToken !== 'string') throw new OAuthError('invalid_request', 'refreshToken is required');
      const key = await refreshRateKey(ctx, refreshToken, req.ip ?? 'unknown');
      const tokens = await withAuthBudget(ctx.auth.limits, key, () => refreshTokenGrant(ctx, { refresh_token: refreshToken }, AUDIENCE_LEGACY));
      res.setHeader('Cache-Control', 'no-store');
      res.json(legacyShape(tokens));
    }],
  });
  router.use('/api/authenticate', ((err, _req, _res, next) => {
    if (err instanceof OAuthError) return next(err);
    next(new OAuthError('invalid_request', 'the body is malformed'));
  }) as express.ErrorRequestHandler);
  return router;
}

export { AUDIENCE_LEGACY };
