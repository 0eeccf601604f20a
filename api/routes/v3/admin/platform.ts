/**
 * Platform operations under /api/v3/admin/platform: the permission catalogue, force revocation,
 * the revoked-token view and on-demand signing-key rotation.
 */
import { Router } from 'express';
import type { AppContext } from '../../../context.ts';
import { PERMISSIONS } from '../../../../shared/permissions.ts';
import { route } from '../../../http/route.ts';
import { actorOf, authorize } from '../../../middleware/authenticate.ts';
import { forceRevoke, listRevokedTokens } from '../../../services/admin/revoked-tokens.ts';
import { jsonBody } from '../../../middleware/body.ts';
import { onlyKnown } from '../../../../shared/validation/members.ts';
import { masterKeyStatus, startRewrap } from '../../../services/platform/master-key.ts';
import { writeBackup } from '../../../services/platform/backup.ts';

const FORCE_REVOKE_MEMBERS: ReadonlySet<string> = new Set(['jti', 'token', 'reason']);

/** Router mounted at /api/v3/admin/platform (after authentication). */
export function createPlatformRouter(ctx: AppContext): Router {
  const router = Router();
  const json = jsonBody(ctx.config.jsonLimitBytes);

  route(router, '/scopes', {
    get: [
      authorize(ctx, 'admin.platform.scopes.read'),
      (_req, res) => {
        res.json({ items: PERMISSIONS, total: PERMISSIONS.length });
      },
    ],
  });

  route(router, '/tokens/revoke', {
    post: [
      authorize(ctx, 'admin.platform.tokens.revoke'),
      ...json,
      async (req, res) => {
        onlyKnown(req.body ?? {}, FORCE_REVOKE_MEMBERS);
        const revoked = await forceRevoke(ctx, req.body ?? {}, actorOf(req));
        if (revoked)
          ctx.audit.record({
            tenantId: req.auth.tenantId,
            actor: actorOf(req),
            action: 'platform.token.force-revoke',
            outcome: 'success',
            target: revoked.jti,
            details: { tokenTenant: revoked.tenantId },
          });
        res.status(200).json({ revoked: revoked !== null, jti: revoked?.jti ?? null });
      },
    ],
  });

  route(router, '/tokens/revoked', {
    get: [
      authorize(ctx, 'admin.platform.tokens.read'),
      async (req, res) => {
        res.json(await listRevokedTokens(ctx, req.query));
      },
    ],
  });

  route(router, '/signing-keys/rotate', {
    post: [
      authorize(ctx, 'admin.platform.signing-keys.rotate'),
      async (req, res) => {
        const kid = await ctx.auth.signingKeys.rotate(ctx.auth.maxTokenLifetime);
        ctx.audit.record({
          tenantId: req.auth.tenantId,
          actor: actorOf(req),
          action: 'platform.signing-key.rotate',
          outcome: 'success',
          target: kid,
        });
        res.status(201).json({ kid });
      },
    ],
  });
  // The master keyring (issue 28). The catalogue stays the spec's 82 permissions: the signing-key
  // pair already means "the platform's root key material", which the master key is the root of.
  route(router, '/master-key', {
    get: [
      authorize(ctx, 'admin.platform.signing-keys.read'),
      async (_req, res) => {
        res.json(await masterKeyStatus(ctx));
      },
    ],
  });

  route(router, '/master-key/rewrap', {
    post: [
      authorize(ctx, 'admin.platform.signing-keys.rotate'),
      (req, res) => {
        res.status(202).json(startRewrap(ctx, req.auth.tenantId, actorOf(req)));
      },
    ],
  });
  // Every tenant's data, so the cross-tenant permission; the CLI encrypts it (issue 28).
  route(router, '/backup', {
    get: [
      authorize(ctx, 'admin.platform.cross-tenant'),
      async (req, res) => {
        res.setHeader('content-type', 'application/x-ndjson');
        res.setHeader('cache-control', 'no-store');
        const counts = await writeBackup(ctx, res);
        ctx.audit.record({
          tenantId: req.auth.tenantId,
          actor: actorOf(req),
          action: 'platform.backup',
          outcome: 'success',
          target: null,
          details: { rows: Object.values(counts).reduce((a, b) => a + b, 0) },
        });
      },
    ],
  });
  return router;
}
