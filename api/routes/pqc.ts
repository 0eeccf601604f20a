/**
 * The PQC API (contract 3): ML-KEM and X-Wing hybrid (X25519 + ML-KEM-768) encapsulation,
 * ML-DSA and SLH-DSA signatures, on Node 24's native implementations.
 */
import { Router } from 'express';
import type { AppContext } from '../context.ts';
import { AppError } from '../../shared/errors/index.ts';
import { route } from '../http/route.ts';
import { paginate } from '../http/pagination.ts';
import { authorize } from '../middleware/authenticate.ts';
import { apiRateLimit } from '../middleware/rate-limit.ts';
import { jsonBody } from '../middleware/body.ts';
import { keyView } from '../services/keys/store.ts';
import {
  DECAPSULATE_MEMBERS, ENCAPSULATE_MEMBERS, SIGN_MEMBERS, VERIFY_MEMBERS, decapsulateKey, encapsulateKey, sign, verify, usableKey,
} from '../services/crypto/runtime.ts';
import { onlyKnown } from '../../shared/validation/members.ts';
import { runtimeHandler } from './crypto.ts';

const PQC_TYPE = /^(ml-kem-|ml-dsa-|slh-dsa-|x25519-ml-kem-)/;

type Operation = Parameters<typeof runtimeHandler>[2];

/** Restricts an operation to post-quantum key types; unknown members are a 400 before the key lookup. */
function pqcOnly(op: Operation, known: ReadonlySet<string>): Operation {
  return async (ctx, tenantId, body) => {
    onlyKnown(body, known);
    const key = await usableKey(ctx, tenantId, body.kid);
    if (!PQC_TYPE.test(key.type)) throw new AppError('key_usage_mismatch', `key ${key.kid} is ${key.type}, not a post-quantum key; use /api/v3/crypto`);
    return op(ctx, tenantId, body);
  };
}

/** Mounted at /api/v3/pqc (after service-core authentication). */
export function createPqcRouter(ctx: AppContext): Router {
  const router = Router();
  const json = jsonBody(ctx.config.jsonLimitBytes);
  route(router, '/keys', {
    get: [authorize(ctx, 'pqc.keys.read'), async (req, res) => {
      const q = ctx.db('keys').where({ tenant_id: req.auth.tenantId }).whereIn('state', ['active', 'suspended'])
        .where((w) => w.where('type', 'like', 'ml-%').orWhere('type', 'like', 'slh-%').orWhere('type', 'like', 'x25519-%'));
      res.json(await paginate(q, 'kid', req, (r) => keyView(r)));
    }],
  });
  const ops: Array<[string, string, Operation, ReadonlySet<string>]> = [
    ['encapsulate', 'pqc.encapsulate', encapsulateKey, ENCAPSULATE_MEMBERS], ['decapsulate', 'pqc.decapsulate', decapsulateKey, DECAPSULATE_MEMBERS],
    ['sign', 'pqc.sign', sign, SIGN_MEMBERS], ['verify', 'pqc.verify', verify, VERIFY_MEMBERS],
  ];
  for (const [name, permission, op, known] of ops) {
    route(router, `/${name}`, { post: [authorize(ctx, permission), apiRateLimit(ctx, `pqc.${name}`), ...json, runtimeHandler(ctx, `pqc.${name}`, pqcOnly(op, known))] });
  }
  return router;
}
