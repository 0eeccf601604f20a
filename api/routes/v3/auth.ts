/**
 * The Auth API (spec 2.1-2.4, 7.1): token, revocation (RFC 7009), introspection (RFC 7662),
 * forgot-password. Form-urlencoded only; errors in the OAuth shape.
 */
import { Router, type ErrorRequestHandler, type Request } from 'express';
import type { AppContext } from '../../context.ts';
import { OAuthError, AppError } from '../../../shared/errors/index.ts';
import { route } from '../../http/route.ts';
import { formBody } from '../../http/form-body.ts';
import {
  introspect,
  issueToken,
  revokePresentedToken,
} from '../../services/auth/token-endpoint.ts';
import { forgotPassword, resetPassword } from '../../services/auth/password-requests.ts';
import { isDatabaseUnavailable } from '../../../shared/db/knex.ts';
import { toAppError } from '../../middleware/errors.ts';

/**
 * Every answer under /api/v3/auth has the OAuth error shape (RFC 6749 5.2), whatever failed:
 * a catalogued problem keeps its code and status, a full pool is temporarily_unavailable, and
 * anything unexpected is a logged server_error whose cause never leaves.
 */
function oauthShaped(err: unknown, req: Request): OAuthError {
  if (err instanceof OAuthError) return err;
  if (!(err instanceof AppError) && isDatabaseUnavailable(err)) err = toAppError(err);
  if (err instanceof AppError && err.status === 503)
    return new OAuthError('temporarily_unavailable', err.message, 503, err.headers);
  if (err instanceof AppError && err.expose)
    return new OAuthError(err.code, err.message, err.status, err.headers);
  const status = (err as { status?: unknown })?.status;
  if (typeof status === 'number' && status >= 400 && status < 500)
    return new OAuthError('invalid_request', 'the request is malformed', status);
  req.log.error({ err: (err as Error)?.message, stack: (err as Error)?.stack }, 'request failed');
  return new OAuthError(
    'server_error',
    'an unexpected error occurred; the request id identifies it in the logs',
    500,
  );
}

/** Router for /api/v3/auth/*. */
export function createAuthRouter(ctx: AppContext): Router {
  const router = Router();
  router.use((_req, res, next) => {
    res.setHeader('Cache-Control', 'no-store');
    next();
  });

  route(router, '/token', {
    post: [
      formBody,
      async (req, res) => {
        res.json(
          await issueToken(ctx, {
            form: req.body as Record<string, string>,
            authorization: req.headers.authorization,
            address: req.ip ?? 'unknown',
          }),
        );
      },
    ],
  });

  route(router, '/token/revoke', {
    post: [
      formBody,
      async (req, res) => {
        await revokePresentedToken(ctx, (req.body as Record<string, string>).token);
        // RFC 7009 2.2 and spec 3.1: 200 whether or not the token existed.
        res.status(200).json({});
      },
    ],
  });

  route(router, '/token/introspect', {
    post: [
      formBody,
      async (req, res) => {
        res.json(
          await introspect(
            ctx,
            (req.body as Record<string, string>).token,
            req.headers.authorization,
          ),
        );
      },
    ],
  });

  route(router, '/password/forgot', {
    post: [
      formBody,
      async (req, res) => {
        const { email, tenant_id: tenantId } = req.body as Record<string, string>;
        await forgotPassword(ctx, { email, tenantId }, req.ip ?? 'unknown');
        // The same answer for known and unknown addresses.
        res.status(202).json({
          status: 'accepted',
          message: 'if the address is registered, a reset link has been sent',
        });
      },
    ],
  });

  route(router, '/password/reset', {
    post: [
      formBody,
      async (req, res) => {
        const { token, password } = req.body as Record<string, string>;
        await resetPassword(ctx, { token, password }, req.ip ?? 'unknown');
        res.status(200).json({ status: 'password-changed' });
      },
    ],
  });

  router.use((req, _res, next) =>
    next(
      new OAuthError(
        'not_found',
        `no endpoint at ${req.method} ${req.baseUrl}${req.path.slice(0, 200)}`,
        404,
      ),
    ),
  );
  router.use(((err, req, _res, next) => next(oauthShaped(err, req))) as ErrorRequestHandler);
  return router;
}
