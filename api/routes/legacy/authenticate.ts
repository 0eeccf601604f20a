/** The legacy JSON login of spec 4.2 (`POST /api/authenticate/app`) and its refresh call. */
import type express from 'express';
import { Router } from 'express';
import type { AppContext } from '../../context.ts';
import { OAuthError } from '../../../shared/errors/index.ts';
import { route } from '../../http/route.ts';
import { jsonBody } from '../../http/json-body.ts';
import { legacyLogin, legacyRefresh } from '../../services/auth/legacy-login.ts';

/** The legacy calls take application/json only, holding an object (anything else is invalid_request). */
const jsonOnly = [
  (req: express.Request, _res: express.Response, next: express.NextFunction) => {
    if (!req.is('application/json'))
      throw new OAuthError('invalid_request', 'the body must be a JSON object');
    next();
  },
  ...jsonBody(16 * 1024),
  (req: express.Request, _res: express.Response, next: express.NextFunction) => {
    if (!req.body || typeof req.body !== 'object')
      throw new OAuthError('invalid_request', 'the body must be a JSON object');
    next();
  },
];

/** Mounted at /api/authenticate (public: these calls issue the tokens). */
export function createLegacyAuthRouter(ctx: AppContext): Router {
  const router = Router();
  route(router, '/app', {
    post: [
      ...jsonOnly,
      async (req, res) => {
        const tokens = await legacyLogin(
          ctx,
          req.body as Record<string, unknown>,
          req.ip ?? 'unknown',
        );
        res.setHeader('Cache-Control', 'no-store');
        res.json(tokens);
      },
    ],
  });
  route(router, '/refresh', {
    post: [
      ...jsonOnly,
      async (req, res) => {
        const tokens = await legacyRefresh(
          ctx,
          req.body as Record<string, unknown>,
          req.ip ?? 'unknown',
        );
        res.setHeader('Cache-Control', 'no-store');
        res.json(tokens);
      },
    ],
  });
  router.use(((err, _req, _res, next) => {
    if (err instanceof OAuthError) return next(err);
    next(new OAuthError('invalid_request', 'the body is malformed'));
  }) as express.ErrorRequestHandler);
  return router;
}
