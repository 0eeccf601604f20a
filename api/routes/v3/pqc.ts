/**
 * The PQC API (contract 3): ML-KEM and X-Wing hybrid (X25519 + ML-KEM-768) encapsulation,
 * ML-DSA and SLH-DSA signatures, on Node 24's native implementations.
 */
import { Router } from 'express';
import type { AppContext } from '../../context.ts';
import { route } from '../../http/route.ts';
import { pageParams } from '../../http/pagination.ts';
import { authorize } from '../../middleware/authenticate.ts';
import { addRuntimeRoutes } from '../../http/runtime-route.ts';
import { listPqcKeys } from '../../services/key-lists.ts';
import { PQC_OPERATIONS } from '../../services/crypto/pqc.ts';

/** Mounted at /api/v3/pqc (after service-core authentication). */
export function createPqcRouter(ctx: AppContext): Router {
  const router = Router();
  route(router, '/keys', {
    get: [
      authorize(ctx, 'pqc.keys.read'),
      async (req, res) => {
        res.json(await listPqcKeys(ctx.db, req.auth.tenantId, pageParams(req)));
      },
    ],
  });
  return addRuntimeRoutes(
    ctx,
    router,
    PQC_OPERATIONS.map(([name, permission, op]) => ({
      path: `/${name}`,
      permissions: [permission],
      action: `pqc.${name}`,
      op,
    })),
  );
}
