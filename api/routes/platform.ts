/**
 * Platform operations under /api/v3/admin/platform: the permission catalogue, force revocation,
 * the revoked-token view and on-demand signing-key rotation.
 */
import { Router } from 'express';
import type { AppContext } from '../context.ts';
import { AppError } from '../../shared/errors/index.ts';
import { PERMISSIONS } from '../../shared/permissions.ts';
import { route } from '../http/route.ts';
import { authorize } from '../middleware/authenticate.ts';
import { jsonBody } from '../middleware/body.ts';
import { onlyKnown } from '../../shared/validation/members.ts';

const FORCE_REVOKE_MEMBERS: ReadonlySet<string> = new Set(['jti', 'token', 'reason']);

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;

/** Router mounted at /api/v3/admin/platform (after authentication). */
export function createPlatformRouter(ctx: AppContext): Router {
  const router = Router();
  const json = jsonBody(ctx.config.jsonLimitBytes);

  route(router, '/scopes', {
    get: [authorize(ctx, 'admin.platform.scopes.read'), (_req, res) => {
      res.json({ items: PERMISSIONS, total: PERMISSIONS.length });
    }],
  });

  route(router, '/tokens/revoke', {
    post: [authorize(ctx, 'admin.platform.tokens.revoke'), ...json, async (req, res) => {
      onlyKnown(req.body ?? {}, FORCE_REVOKE_MEMBERS);
      const { jti, token, reason } = (req.body ?? {}) as Record<string, unknown>;
      let target: { jti: string; tenantId: string | null; sub: string | null; exp: Date } | null = null;
      if (typeof token === 'string') {
        const claims = await ctx.auth.tokens.verifyFresh(token);
        if (claims) target = { jti: claims.jti, tenantId: claims.tenantId, sub: claims.sub, exp: new Date(claims.exp * 1000) };
      } else if (typeof jti === 'string' && jti.length > 0 && jti.length <= 128 && !CONTROL.test(jti) && jti.isWellFormed()) {
        // A bare jti: kept for the longest lifetime a token can have.
        target = { jti, tenantId: null, sub: null, exp: new Date(Date.now() + ctx.auth.maxTokenLifetime * 1000) };
      } else {
        throw new AppError('validation_failed', 'give `jti` or `token`');
      }
      if (target) {
        await ctx.auth.revocation.revoke({ jti: target.jti, tenantId: target.tenantId, sub: target.sub, expiresAt: target.exp, revokedBy: `${req.auth.kind}:${req.auth.sub}`, reason: typeof reason === 'string' ? reason.slice(0, 200) : 'force-revoke' });
        ctx.audit.record({ tenantId: req.auth.tenantId, actor: `${req.auth.kind}:${req.auth.sub}`, action: 'platform.token.force-revoke', outcome: 'success', target: target.jti, details: { tokenTenant: target.tenantId } });
      }
      res.status(200).json({ revoked: target !== null, jti: target?.jti ?? null });
    }],
  });

  route(router, '/tokens/revoked', {
    get: [authorize(ctx, 'admin.platform.tokens.read'), async (req, res) => {
      const limit = Math.min(Math.max(Number(req.query.limit ?? 100) || 100, 1), 500);
      const cursor = typeof req.query.cursor === 'string' && req.query.cursor !== '' ? req.query.cursor : null;
      // The cursor is a jti this endpoint issued: at most 128 characters, no control character.
      // A NUL reached the database, which refuses it in a text comparison (a 500 before).
      if (cursor !== null && (cursor.length > 128 || CONTROL.test(cursor) || !cursor.isWellFormed())) {
        throw new AppError('validation_failed', 'cursor is not one this endpoint issued');
      }
      const q = ctx.db('revoked_tokens').where('expires_at', '>', new Date()).orderBy('jti').limit(limit + 1);
      if (cursor) q.where('jti', '>', cursor);
      const rows = await q;
      const items = rows.slice(0, limit).map((r) => ({ jti: r.jti, tenantId: r.tenant_id, sub: r.sub, expiresAt: new Date(r.expires_at).toISOString(), revokedAt: new Date(r.revoked_at).toISOString(), revokedBy: r.revoked_by, reason: r.reason }));
      res.json({ items, nextCursor: rows.length > limit ? items[items.length - 1].jti : null });
    }],
  });

  route(router, '/signing-keys/rotate', {
    post: [authorize(ctx, 'admin.platform.signing-keys.rotate'), async (req, res) => {
      const kid = await ctx.auth.signingKeys.rotate(ctx.auth.maxTokenLifetime);
      ctx.audit.record({ tenantId: req.auth.tenantId, actor: `${req.auth.kind}:${req.auth.sub}`, action: 'platform.signing-key.rotate', outcome: 'success', target: kid });
      res.status(201).json({ kid });
    }],
  });
  return router;
}
