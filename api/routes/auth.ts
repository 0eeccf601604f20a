/**
 * The Auth API (spec 2.1-2.4, 7.1): token, revocation (RFC 7009), introspection (RFC 7662),
 * forgot-password. Form-urlencoded only; errors in the OAuth shape.
 */
import { Router, type ErrorRequestHandler, type Request } from 'express';
import type { AppContext } from '../context.ts';
import { OAuthError, AppError } from '../../shared/errors/index.ts';
import { route } from '../http/route.ts';
import { formBody } from '../http/form-body.ts';
import { GRANTS, basicClientAuth, clientAuthOf, type ClientAuth } from '../services/auth/grants.ts';
import { isRateLimited, rateKey, retryAfterSeconds, withAuthBudget } from '../services/auth/rate-limits.ts';
import { revokeRefreshFamily } from '../services/auth/refresh-tokens.ts';
import { startPasswordReset, completePasswordReset, pendingReset } from '../services/auth/password-reset.ts';
import { loadUser } from '../services/auth/passwords.ts';
import { isUuid } from '../../shared/ids.ts';
import { isDatabaseUnavailable } from '../../shared/db/knex.ts';
import { toAppError } from '../middleware/errors.ts';

/**
 * Every answer under /api/v3/auth has the OAuth error shape (RFC 6749 5.2), whatever failed:
 * a catalogued problem keeps its code and status, a full pool is temporarily_unavailable, and
 * anything unexpected is a logged server_error whose cause never leaves.
 */
function oauthShaped(err: unknown, req: Request): OAuthError {
  if (err instanceof OAuthError) return err;
  if (!(err instanceof AppError) && isDatabaseUnavailable(err)) err = toAppError(err);
  if (err instanceof AppError && err.status === 503) return new OAuthError('temporarily_unavailable', err.message, 503, err.headers);
  if (err instanceof AppError && err.expose) return new OAuthError(err.code, err.message, err.status, err.headers);
  const status = (err as { status?: unknown })?.status;
  if (typeof status === 'number' && status >= 400 && status < 500) return new OAuthError('invalid_request', 'the request is malformed', status);
  req.log.error({ err: (err as Error)?.message, stack: (err as Error)?.stack }, 'request failed');
  return new OAuthError('server_error', 'an unexpected error occurred; the request id identifies it in the logs', 500);
}

/** The caller's own token, from the Authorization header, for introspection. */
async function callerClaims(ctx: AppContext, req: Request) {
  const h = req.headers.authorization;
  return h?.startsWith('Bearer ') ? ctx.auth.tokens.verifyFresh(h.slice(7).trim()) : null;
}

/** Router for /api/v3/auth/*. */
export function createAuthRouter(ctx: AppContext): Router {
  const router = Router();
  router.use((_req, res, next) => {
    res.setHeader('Cache-Control', 'no-store');
    next();
  });

  route(router, '/token', {
    post: [formBody, async (req, res) => {
      const form = req.body as Record<string, string>;
      // Steps (node-oidc-provider style): grant known → rate gate on the canonical identity → grant → respond.
      if (!form.grant_type) throw new OAuthError('invalid_request', 'grant_type is required');
      const grant = GRANTS.get(form.grant_type);
      if (!grant) throw new OAuthError('unsupported_grant_type', `grant_type ${form.grant_type.slice(0, 80)} is not supported`);
      // Client authentication: form fields or HTTP Basic (client_secret_basic, RFC 6749 2.3.1), one of them.
      let client: ClientAuth | null = null;
      if (grant.authenticatesClient) client = clientAuthOf(req.headers.authorization, form);
      else if (basicClientAuth(req.headers.authorization)) {
        // Never ignored: a caller must not believe credentials were checked when they were not.
        throw new OAuthError('invalid_request', `grant_type ${form.grant_type} does not authenticate a client; send no Basic credentials`);
      }
      const address = req.ip ?? 'unknown';
      const key = await grant.rateKey(ctx, form, address, client);
      res.json(await withAuthBudget(ctx.auth.limits, key, () => grant.run(ctx, form, address, client)));
    }],
  });

  route(router, '/token/revoke', {
    post: [formBody, async (req, res) => {
      const { token } = req.body as Record<string, string>;
      if (token) {
        const claims = await ctx.auth.tokens.verifyFresh(token);
        if (claims) {
          await ctx.auth.revocation.revoke({ jti: claims.jti, tenantId: claims.tenantId, sub: claims.sub, expiresAt: new Date(claims.exp * 1000), revokedBy: claims.sub, reason: 'rfc7009' });
          ctx.audit.record({ tenantId: claims.tenantId, actor: `${claims.kind}:${claims.sub}`, action: 'auth.token.revoke', outcome: 'success', target: claims.jti });
        } else if (token.startsWith('rt_')) {
          const family = await revokeRefreshFamily(ctx.db, token);
          // RFC 7009 2.1: access tokens of the same grant are invalidated with it.
          if (family) await ctx.auth.revokeFamilyTokens(family.familyId, family.tenantId, 'rfc7009');
          if (family) ctx.audit.record({ tenantId: family.tenantId, actor: 'refresh-token', action: 'auth.refresh.revoke', outcome: 'success', target: family.familyId });
        }
      }
      // RFC 7009 2.2 and spec 3.1: 200 whether or not the token existed.
      res.status(200).json({});
    }],
  });

  route(router, '/token/introspect', {
    post: [formBody, async (req, res) => {
      const { token } = req.body as Record<string, string>;
      if (!token) throw new OAuthError('invalid_request', 'token is required');
      const caller = await callerClaims(ctx, req);
      if (!caller) throw new OAuthError('invalid_client', 'introspection requires the caller\'s bearer token', 401, { 'WWW-Authenticate': 'Bearer realm="keyward"' });
      const claims = await ctx.auth.tokens.verifyFresh(token);
      const own = claims !== null && claims.jti === caller.jti;
      if (!own && !caller.permissions.includes('admin.platform.introspect')) {
        // RFC 7662 2.2: a caller not allowed to know answers as if the token were inactive.
        res.json({ active: false });
        return;
      }
      if (!claims) {
        res.json({ active: false });
        return;
      }
      res.json({
        active: true, sub: claims.sub, exp: claims.exp, iat: claims.iat, scope: claims.permissions.join(' '), client_id: claims.client_id,
        aud: claims.aud, iss: claims.iss, jti: claims.jti, token_type: 'Bearer', tenantId: claims.tenantId, ...(claims.act ? { act: claims.act } : {}),
      });
    }],
  });

  route(router, '/password/forgot', {
    post: [formBody, async (req, res) => {
      const { email, tenant_id: tenantId } = req.body as Record<string, string>;
      if (!email || !tenantId) throw new OAuthError('invalid_request', 'email and tenant_id are required');
      // Per address: a flood from one client answers 429 (that says nothing about any account).
      try {
        await ctx.auth.limits.forgot.consume(rateKey('address', req.ip ?? 'unknown'));
      } catch (err) {
        if (isRateLimited(err)) throw new OAuthError('too_many_requests', 'too many password reset requests; retry later', 429, { 'Retry-After': String(retryAfterSeconds(err)) });
        throw err;
      }
      await withAuthBudget(ctx.auth.limits, rateKey('forgot', tenantId.toLowerCase(), email.toLowerCase()), async () => {
        const user = isUuid(tenantId) ? await loadUser(ctx.db, { tenantId, email }) : null;
        // Per account: beyond a few mails an hour the answer stays the same and no mail goes out,
        // so the budget neither floods the owner's mailbox nor tells who is registered.
        const mailAllowed = user ? await ctx.auth.limits.resetMails.consume(rateKey('forgot', user.tenantId, user.id)).then(() => true, (err) => {
          if (isRateLimited(err)) return false;
          throw err;
        }) : false;
        if (user && !user.disabled && !mailAllowed) ctx.logger.warn({ tenantId: user.tenantId, userId: user.id }, 'password reset mail budget spent for this account; request answered, no mail sent');
        if (user && !user.disabled && mailAllowed) {
          await startPasswordReset(ctx.db, ctx.auth.mailer, ctx.config.publicBaseUrl, user);
          ctx.audit.record({ tenantId: user.tenantId, actor: `user:${user.id}`, action: 'auth.password.forgot', outcome: 'success' });
        }
      });
      // The same answer for known and unknown addresses.
      res.status(202).json({ status: 'accepted', message: 'if the address is registered, a reset link has been sent' });
    }],
  });

  route(router, '/password/reset', {
    post: [formBody, async (req, res) => {
      const { token, password } = req.body as Record<string, string>;
      if (!token || !password) throw new OAuthError('invalid_request', 'token and password are required');
      // A pending reset has its own budget; made-up tokens spend their sender's address's.
      const pending = await pendingReset(ctx.db, token);
      const key = pending ? rateKey('reset', pending.id) : rateKey('address', req.ip ?? 'unknown');
      // Unauthenticated hashing runs in its bounded budget, so a reset flood cannot slow logins.
      const hash = (p: string) => ctx.auth.hashBudget.run(() => ctx.pool.run<string>('hashPassword', { password: p }));
      await withAuthBudget(ctx.auth.limits, key, async () => {
        try {
          const done = await completePasswordReset(ctx.db, hash, token, password);
          // A new password ends the access tokens the old one got, as it ended their refresh tokens.
          await ctx.auth.revokeSubjectTokens({ tenantId: done.tenantId, sub: done.userId, revokedBy: `user:${done.userId}`, reason: 'password reset', strict: false });
          ctx.audit.record({ tenantId: done.tenantId, actor: `user:${done.userId}`, action: 'auth.password.reset', outcome: 'success' });
        } catch (err) {
          if (err instanceof AppError && err.status < 500) throw new OAuthError('invalid_request', err.message);
          throw err;
        }
      }, (err) => err instanceof OAuthError && err.error === 'invalid_request');
      res.status(200).json({ status: 'password-changed' });
    }],
  });

  router.use((req, _res, next) => next(new OAuthError('not_found', `no endpoint at ${req.method} ${req.baseUrl}${req.path.slice(0, 200)}`, 404)));
  router.use(((err, req, _res, next) => next(oauthShaped(err, req))) as ErrorRequestHandler);
  return router;
}
