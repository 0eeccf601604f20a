/**
 * The Core API (contracts 3 and 8): GET /keys and encrypt, decrypt, sign, verify, the data-key,
 * re-encrypt and random operations, each in single form
 * (`{kid, ...}`) and batch form (`{items: [...]}` → `{results: [...]}`, one failure not
 * failing the others). The tenant comes from the token only.
 */
import { Router, type Request, type Response } from 'express';
import type { AppContext } from '../context.ts';
import { AppError } from '../../shared/errors/index.ts';
import { route } from '../http/route.ts';
import { param } from '../http/params.ts';
import { paginate } from '../http/pagination.ts';
import { actorOfClaims, authorize } from '../middleware/authenticate.ts';
import type { AccessClaims } from '../services/auth/access-tokens.ts';
import { apiRateLimit } from '../middleware/rate-limit.ts';
import { jsonBody } from '../middleware/body.ts';
import { keyView } from '../services/keys/store.ts';
import { decrypt, encrypt, sign, verify } from '../services/crypto/runtime.ts';
import { generateDataKey, generateDataKeyWithoutPlaintext, random, reEncrypt } from '../services/crypto/data-keys.ts';
import { generateMac, verifyMac } from '../services/crypto/mac.ts';
import { publicKeysOf } from '../services/keys/public-view.ts';
import { onlyKnown } from '../../shared/validation/members.ts';

export type Operation = (ctx: AppContext, tenantId: string, body: Record<string, unknown>) => Promise<Record<string, unknown>>;

const MAX_BATCH = 1000;
const BATCH_MEMBERS: ReadonlySet<string> = new Set(['items']);

/**
 * Runs one operation, or each item of a batch, auditing each as a tallied event; returns the
 * response body. Transport-free: the Express routes and the runtime lane both call it.
 */
export async function runRuntime(ctx: AppContext, claims: AccessClaims, action: string, op: Operation, body: unknown): Promise<unknown> {
  if (!body || typeof body !== 'object' || Array.isArray(body)) throw new AppError('validation_failed', 'the body must be a JSON object');
  const input = body as Record<string, unknown>;
  const tenantId = claims.tenantId;
  const actor = actorOfClaims(claims);
  if (!Array.isArray(input.items)) {
    try {
      const result = await op(ctx, tenantId, input);
      ctx.audit.tally({ tenantId, actor, action, outcome: 'success', target: String(result.kid ?? '') });
      return result;
    } catch (err) {
      ctx.audit.tally({ tenantId, actor, action, outcome: 'failure', target: typeof input.kid === 'string' ? input.kid.slice(0, 128) : null });
      throw err;
    }
  }
  onlyKnown(input, BATCH_MEMBERS);
  if (input.items.length === 0 || input.items.length > MAX_BATCH) throw new AppError('validation_failed', `items must hold 1 to ${MAX_BATCH} entries`);
  const results = await Promise.all(input.items.map(async (item: unknown) => {
    try {
      if (!item || typeof item !== 'object') throw new AppError('validation_failed', 'each item must be an object');
      const result = await op(ctx, tenantId, item as Record<string, unknown>);
      ctx.audit.tally({ tenantId, actor, action, outcome: 'success', target: String(result.kid ?? '') });
      return { status: 200, ...result };
    } catch (err) {
      const e = err instanceof AppError ? err : new AppError('internal', 'unexpected failure', { cause: err });
      if (!e.expose) ctx.logger.error({ err: (err as Error)?.message, action }, 'batch item failed');
      ctx.audit.tally({ tenantId, actor, action, outcome: 'failure', target: null });
      return { status: e.status, error: { type: `${ctx.config.publicBaseUrl}/problems/${e.slug}`, title: e.title, status: e.status, detail: e.expose ? e.message : 'unexpected failure' } };
    }
  }));
  return { results };
}

/** The Express handler over runRuntime. */
export function runtimeHandler(ctx: AppContext, action: string, op: Operation) {
  return async (req: Request, res: Response) => {
    res.json(await runRuntime(ctx, req.auth, action, op, req.body));
  };
}

/** The runtime operations of /api/v3/crypto: path segment, permission (or every one of a list), operation. */
export const CRYPTO_OPERATIONS: ReadonlyArray<readonly [string, string | readonly string[], Operation]> = [
  ['encrypt', 'crypto.encrypt', encrypt], ['decrypt', 'crypto.decrypt', decrypt], ['sign', 'crypto.sign', sign], ['verify', 'crypto.verify', verify],
  ['generate-data-key', 'crypto.generate-data-key', generateDataKey],
  ['generate-data-key-without-plaintext', 'crypto.generate-data-key', generateDataKeyWithoutPlaintext],
  // Re-encryption decrypts and encrypts, so it needs both (contract 8).
  ['re-encrypt', ['crypto.decrypt', 'crypto.encrypt'], reEncrypt],
  ['random', 'crypto.generate-data-key', random],
  ['generate-mac', 'crypto.sign', generateMac], ['verify-mac', 'crypto.verify', verifyMac],
];

/** The permissions an entry of CRYPTO_OPERATIONS needs, as a list. */
export const permissionsOf = (permission: string | readonly string[]): string[] => (typeof permission === 'string' ? [permission] : [...permission]);

/** Mounted at /api/v3/crypto (after service-core authentication). */
export function createCryptoRouter(ctx: AppContext): Router {
  const router = Router();
  const json = jsonBody(ctx.config.jsonLimitBytes);
  route(router, '/keys', {
    get: [authorize(ctx, 'crypto.keys.read'), apiRateLimit(ctx, 'crypto.keys'), async (req, res) => {
      // Usable keys only: archived and revoked keys cannot be used at runtime.
      const q = ctx.db('keys').where({ tenant_id: req.auth.tenantId }).whereIn('state', ['active', 'suspended']);
      res.json(await paginate(q, 'kid', req, (r) => keyView(r)));
    }],
  });
  route(router, '/keys/:kid', {
    // Every retained version's public key (contract 8), for verifiers outside the service.
    get: [authorize(ctx, 'crypto.keys.read'), apiRateLimit(ctx, 'crypto.keys'), async (req, res) => {
      res.json(await publicKeysOf(ctx, req.auth.tenantId, param(req, 'kid'), { runtime: true }));
    }],
  });
  for (const [name, permission, op] of CRYPTO_OPERATIONS) {
    route(router, `/${name}`, { post: [authorize(ctx, ...permissionsOf(permission)), apiRateLimit(ctx, `crypto.${name}`), ...json, runtimeHandler(ctx, `crypto.${name}`, op)] });
  }
  return router;
}
