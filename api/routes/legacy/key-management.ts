/**
 * The legacy key management of spec 4.2, /api/key-management/keys: JSON bodies, legacy tokens
 * from /api/authenticate/app, legacy role names (api/middleware/legacy-role.ts).
 */
import { Router } from 'express';
import type { AppContext } from '../../context.ts';
import { route } from '../../http/route.ts';
import { legacyRole } from '../../middleware/legacy-role.ts';
import { actorOf } from '../../middleware/authenticate.ts';
import { jsonBody } from '../../middleware/body.ts';
import { createKey } from '../../services/keys/store.ts';
import { importLegacyKey } from '../../services/legacy-keys.ts';
import { listLegacyKeys } from '../../services/key-lists.ts';

/** Mounted at /api/key-management (after legacy-audience authentication). */
export function createLegacyKeyManagementRouter(ctx: AppContext): Router {
  const router = Router();
  const json = jsonBody(ctx.config.jsonLimitBytes);
  route(router, '/keys', {
    get: [
      legacyRole(ctx, 'key_management.listKeys'),
      async (req, res) => {
        res.json(await listLegacyKeys(ctx.db, req.auth.tenantId));
      },
    ],
    post: [
      legacyRole(ctx, 'key_management.generateKey'),
      ...json,
      async (req, res) => {
        const key = await createKey(ctx, req.auth.tenantId, req.body ?? {});
        ctx.audit.record({
          tenantId: req.auth.tenantId,
          actor: actorOf(req),
          action: 'key.create',
          outcome: 'success',
          target: key.kid,
          details: { legacy: true },
        });
        res.status(201).json(key);
      },
    ],
  });
  route(router, '/keys/import', {
    post: [
      legacyRole(ctx, 'key_management.importKey'),
      ...json,
      async (req, res) => {
        const view = await importLegacyKey(
          ctx,
          req.auth.tenantId,
          (req.body ?? {}) as Record<string, unknown>,
        );
        ctx.audit.record({
          tenantId: req.auth.tenantId,
          actor: actorOf(req),
          action: 'key.import',
          outcome: 'success',
          target: view.kid,
          details: { legacy: true },
        });
        res.status(201).json(view);
      },
    ],
  });
  return router;
}
