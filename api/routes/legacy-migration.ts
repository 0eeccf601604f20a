/**
 * The unversioned keystore-import alias of contract 4, `POST /api/migration/pkcs12`: the same
 * multipart form and answer as `POST /api/v3/admin/tenants/{tenantId}/keys/import-keystore`,
 * importing into the token's tenant (older clients have no tenant in the path). Both the
 * admin and the core audience are accepted, as for /api/v3/migration; the permission decides.
 */
import { Router, type RequestHandler } from 'express';
import type { AppContext } from '../context.ts';
import { route } from '../http/route.ts';
import { authenticate, authorize } from '../middleware/authenticate.ts';
import { AUDIENCE_ADMIN, AUDIENCE_CORE } from '../services/auth/access-tokens.ts';
import { importFromRequest } from './admin/keys.ts';

export const LEGACY_PKCS12_PATH = '/api/migration/pkcs12';

/** Router holding the alias; mounted at the application root. */
export function createLegacyMigrationRouter(ctx: AppContext): Router {
  const router = Router();
  const denied = authorize(ctx, 'migration.keystore.import');
  // Either permission imports: migration.keystore.import (migration tooling) or admin.keys.import.
  const canImport: RequestHandler = (req, res, next) => (req.auth.permissions.includes('admin.keys.import') ? next() : denied(req, res, next));
  route(router, LEGACY_PKCS12_PATH, {
    post: [authenticate(ctx, [AUDIENCE_ADMIN, AUDIENCE_CORE]), canImport, async (req, res) => {
      const keys = await importFromRequest(ctx, req, req.auth.tenantId);
      res.status(201).json({ keys });
    }],
  });
  return router;
}
