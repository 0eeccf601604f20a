/**
 * The unversioned migration aliases, mounted at /api/migration behind authenticate (both the
 * admin and the core audience, as for /api/v3/migration; the permission decides):
 * - `POST /api/migration/pkcs12` (contract 4): the same multipart form and answer as
 *   `POST /api/v3/admin/tenants/{tenantId}/keys/import-keystore`, importing into the token's
 *   tenant (older clients have no tenant in the path);
 * - `POST /api/migration/stream/analyze-pkcs7` (spec 4): the analyze endpoint of
 *   /api/v3/migration/stream.
 */
import { Router, type RequestHandler } from 'express';
import type { AppContext } from '../../context.ts';
import { route } from '../../http/route.ts';
import { importFromRequest } from '../../http/keystore-import.ts';
import { analyzeHandler } from '../../http/pkcs7-analyze.ts';
import { authorize } from '../../middleware/authenticate.ts';
import { apiRateLimit } from '../../middleware/rate-limit.ts';
import { acceptOneOf } from '../../http/streaming.ts';

/** Mounted at /api/migration. */
export function createLegacyMigrationRouter(ctx: AppContext): Router {
  const router = Router();
  const denied = authorize(ctx, 'migration.keystore.import');
  // Either permission imports: migration.keystore.import (migration tooling) or admin.keys.import.
  const canImport: RequestHandler = (req, res, next) =>
    req.auth.permissions.includes('admin.keys.import') ? next() : denied(req, res, next);
  route(router, '/pkcs12', {
    post: [
      canImport,
      async (req, res) => {
        const keys = await importFromRequest(ctx, req, req.auth.tenantId);
        res.status(201).json({ keys });
      },
    ],
  });
  route(router, '/stream/analyze-pkcs7', {
    post: [
      authorize(ctx, 'migration.analyze'),
      apiRateLimit(ctx, 'migration.analyze'),
      acceptOneOf(['application/json']),
      analyzeHandler(ctx),
    ],
  });
  return router;
}
