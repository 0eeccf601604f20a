/** GET /api/v3/crypto/keys and /keys/{kid}: the tenant's usable keys and a key's public versions. */
import { Router } from 'express';
import type { AppContext } from '../../../context.ts';
import { route } from '../../../http/route.ts';
import { param } from '../../../http/params.ts';
import { pageParams } from '../../../http/pagination.ts';
import { authorize } from '../../../middleware/authenticate.ts';
import { apiRateLimit } from '../../../middleware/rate-limit.ts';
import { publicKeysOf } from '../../../../shared/keys/public-view.ts';
import { listUsableKeys } from '../../../services/key-lists.ts';

/** Mounted at /api/v3/crypto/keys (after service-core authentication). */
export function createCryptoKeysRouter(ctx: AppContext): Router {
  const router = Router();
  route(router, '/', {
    get: [
      authorize(ctx, 'crypto.keys.read'),
      apiRateLimit(ctx, 'crypto.keys'),
      async (req, res) => {
        // Usable keys only: archived and revoked keys cannot be used at runtime.
        res.json(await listUsableKeys(ctx.db, req.auth.tenantId, pageParams(req)));
      },
    ],
  });
  route(router, '/:kid', {
    // Every retained version's public key (contract 8), for verifiers outside the service.
    get: [
      authorize(ctx, 'crypto.keys.read'),
      apiRateLimit(ctx, 'crypto.keys'),
      async (req, res) => {
        res.json(await publicKeysOf(ctx, req.auth.tenantId, param(req, 'kid'), { runtime: true }));
      },
    ],
  });
  return router;
}
