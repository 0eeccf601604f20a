/**
 * The legacy unversioned API (spec 4.2): JSON bodies, legacy tokens from /api/authenticate/app,
 * and the legacy role names checked against the token's `scopes`. A missing role answers 401
 * (spec 5.12), unlike the v3 APIs' 403.
 */
import { Router, type RequestHandler } from 'express';
import type { AppContext } from '../context.ts';
import { AppError } from '../../shared/errors/index.ts';
import { route } from '../http/route.ts';
import { authenticate } from '../middleware/authenticate.ts';
import { jsonBody } from '../middleware/body.ts';
import { AUDIENCE_LEGACY } from '../services/auth/access-tokens.ts';
import { createKey, keyView, storeKey, checkNewKey } from '../services/keys/store.ts';
import { importKeystore } from '../services/keys/import.ts';
import { decrypt, encrypt, sign, verify } from '../services/crypto/runtime.ts';
import { runtimeHandler } from './crypto.ts';

/** 401 unless the legacy token carries the role. */
function legacyRole(ctx: AppContext, role: string): RequestHandler {
  return (req, _res, next) => {
    if (!req.auth.scopes?.includes(role)) {
      ctx.audit.record({ tenantId: req.auth.tenantId, actor: `${req.auth.kind}:${req.auth.sub}`, action: 'access', outcome: 'denied', target: `${req.method} ${req.originalUrl.split('?')[0]}`, details: { missingRole: role } });
      throw new AppError('unauthorized', `the token lacks the role ${role}`, { headers: { 'WWW-Authenticate': 'Bearer realm="keyward", error="insufficient_scope"' } });
    }
    next();
  };
}

/** Router for /api/key-management/* and /api/crypto/* (legacy tokens only). */
export function createLegacyRouter(ctx: AppContext): Router {
  const router = Router();
  const json = jsonBody(ctx.config.jsonLimitBytes);
  const auth = authenticate(ctx, [AUDIENCE_LEGACY]);
  route(router, '/api/key-management/keys', {
    get: [auth, legacyRole(ctx, 'key_management.listKeys'), async (req, res) => {
      const rows = await ctx.db('keys').where({ tenant_id: req.auth.tenantId }).whereNot({ state: 'archived' }).orderBy('kid').limit(1000);
      res.json({ keys: rows.map((r) => keyView(r)) });
    }],
    post: [auth, legacyRole(ctx, 'key_management.generateKey'), ...json, async (req, res) => {
      const key = await createKey(ctx, req.auth.tenantId, req.body ?? {});
      ctx.audit.record({ tenantId: req.auth.tenantId, actor: `${req.auth.kind}:${req.auth.sub}`, action: 'key.create', outcome: 'success', target: key.kid, details: { legacy: true } });
      res.status(201).json(key);
    }],
  });
  route(router, '/api/key-management/keys/import', {
    post: [auth, legacyRole(ctx, 'key_management.importKey'), ...json, async (req, res) => {
      const { pem, key, type, kid, usage, password } = (req.body ?? {}) as Record<string, unknown>;
      let view;
      if (typeof pem === 'string') {
        [view] = await importKeystore(ctx, req.auth.tenantId, { data: Buffer.from(pem, 'utf8'), password: typeof password === 'string' ? password : undefined, kid: typeof kid === 'string' ? kid : undefined, usage: typeof usage === 'string' ? usage : undefined });
      } else if (typeof key === 'string') {
        // A raw symmetric key, base64: its length must match the AES type.
        const secret = Buffer.from(key, 'base64');
        const checked = await checkNewKey(ctx, req.auth.tenantId, { type: type ?? (secret.length === 16 ? 'aes-128' : 'aes-256'), usage, kid });
        if (!checked.type.startsWith('aes-') || secret.length * 8 !== Number(checked.type.slice(4))) throw new AppError('validation_failed', 'key must be base64 of a 16- or 32-byte AES key matching type');
        view = await storeKey(ctx, req.auth.tenantId, { kid: checked.kid, type: checked.type, usage: checked.usage, source: 'imported' }, { type: checked.type, secret });
      } else {
        throw new AppError('validation_failed', 'give pem (private key and optional certificates) or key (base64 AES key)');
      }
      ctx.audit.record({ tenantId: req.auth.tenantId, actor: `${req.auth.kind}:${req.auth.sub}`, action: 'key.import', outcome: 'success', target: view.kid, details: { legacy: true } });
      res.status(201).json(view);
    }],
  });
  const ops = [['encrypt', 'secure.encrypt', encrypt], ['decrypt', 'secure.decrypt', decrypt], ['sign', 'secure.sign', sign], ['verify', 'secure.verifySignature', verify]] as const;
  for (const [name, role, op] of ops) {
    route(router, `/api/crypto/${name}`, { post: [auth, legacyRole(ctx, role), ...json, runtimeHandler(ctx, `legacy.crypto.${name}`, op)] });
  }
  return router;
}
