/**
 * The Auth API (spec 2.1-2.4, 7.1): token, revocation (RFC 7009), introspection (RFC 7662),
 * forgot-password. Form-urlencoded only; errors in the OAuth shape.
 */
import type { IncomingMessage } from 'node:http';
import { Router, type ErrorRequestHandler } from 'express';
import type { AppContext } from '../../context.ts';
import { OAuthError } from '../../../shared/errors/index.ts';
import { route } from '../../http/route.ts';
import { formBody, readCanonicalForm } from '../../http/form-body.ts';
import { issueToken, revokePresentedToken } from '../../services/auth/token-endpoint.ts';
import { introspect } from '../../services/auth/introspection.ts';
import { forgotPassword, resetPassword } from '../../services/auth/password-requests.ts';
import { oauthShaped } from '../../access/problems.ts';
import type { OAuthRoute } from '../../http/runtime-route.ts';

/**
 * POST /token's core, run by the Express route below and by the runtime lane alike: the form
 * (read and made canonical by the one form reader), then the grant. Trust proxy is off, so the
 * client address is the socket's, as Express's req.ip.
 */
function serveToken(ctx: AppContext, req: IncomingMessage) {
  return readCanonicalForm(req).then((form) =>
    issueToken(ctx, {
      form,
      authorization: req.headers.authorization,
      address: req.socket.remoteAddress ?? 'unknown',
    }),
  );
}

/** The routes of this router that the runtime lane also serves (token issuance: workloads call it all day). */
export const AUTH_LANE: readonly OAuthRoute[] = [{ path: '/token', serve: serveToken }];

/** Router for /api/v3/auth/*. */
export function createAuthRouter(ctx: AppContext): Router {
  const router = Router();
  router.use((_req, res, next) => {
    res.setHeader('Cache-Control', 'no-store');
    next();
  });

  route(router, '/token', { post: async (req, res) => res.json(await serveToken(ctx, req)) });

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
          await introspect(ctx, {
            form: req.body as Record<string, string>,
            authorization: req.headers.authorization,
            // The socket's address, as the token endpoint keys its budgets (trust proxy is off).
            address: req.socket.remoteAddress ?? 'unknown',
          }),
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
        // The same answer for known and unknown addresses, written before any work on the
        // account: that runs as a background task, on a later turn of the event loop.
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
  router.use(((err, req, _res, next) => next(oauthShaped(err, req.log))) as ErrorRequestHandler);
  return router;
}
