/**
 * Admin key routes (contract 3): create, list, read, rotate, suspend, resume, revoke, archive,
 * bulk orchestration, and keystore import (contract 4). Never returns private material.
 */
import { Router, type RequestHandler } from 'express';
import type { AppContext } from '../../../../context.ts';
import { problem } from '../../../../../shared/errors/index.ts';
import { route } from '../../../../http/route.ts';
import { pageParams } from '../../../../http/pagination.ts';
import { auditChange, param, tenantParam } from '../../../../http/params.ts';
import { importFromRequest } from '../../../../http/keystore-import.ts';
import { actorOf, authorize } from '../../../../middleware/authenticate.ts';
import { jsonBody } from '../../../../middleware/body.ts';
import { changeKey, createKey, readKey } from '../../../../services/keys/store.ts';
import { applySettings, readSettingsPatch } from '../../../../services/keys/settings.ts';
import { onlyKnown } from '../../../../../shared/validation/members.ts';
import { tenantPolicy } from '../../../../services/policies.ts';
import { publicKeysOf } from '../../../../../shared/keys/public-view.ts';
import { orchestrate, orchestration } from '../../../../services/keys/orchestrate.ts';
import type { KeyAction } from '../../../../../shared/keys/lifecycle.ts';
import { listAdminKeys } from '../../../../services/key-lists.ts';

/** The members key creation reads (contract 3 and 8); anything else is a 400 naming it. */
const CREATE_MEMBERS: ReadonlySet<string> = new Set([
  'type',
  'usage',
  'kid',
  'description',
  'rotationPeriodDays',
]);
const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** Mounted at /api/v3/admin/tenants/:tenantId/keys. */
export function createKeysRouter(ctx: AppContext): Router {
  const router = Router({ mergeParams: true });
  const json = jsonBody(ctx.config.jsonLimitBytes);

  route(router, '/', {
    get: [
      authorize(ctx, 'admin.keys.read'),
      async (req, res) => {
        res.json(await listAdminKeys(ctx, tenantParam(req), req.query.state, pageParams(req)));
      },
    ],
    post: [
      authorize(ctx, 'admin.keys.create'),
      ...json,
      async (req, res) => {
        const body: unknown = req.body ?? {};
        if (!isObject(body))
          throw problem('validation_failed', 'the body must be a JSON object', {
            details: { field: 'body' },
          });
        onlyKnown(body, CREATE_MEMBERS);
        const key = await createKey(ctx, tenantParam(req), body as { type: unknown });
        auditChange(ctx, req, 'key.create', key.kid, { type: key.type, usage: key.usage });
        res.status(201).json(key);
      },
    ],
  });

  route(router, '/import-keystore', {
    post: [
      authorize(ctx, 'admin.keys.import'),
      async (req, res) => {
        const keys = await importFromRequest(ctx, req);
        res.status(201).json({ keys });
      },
    ],
  });

  route(router, '/orchestrate', {
    post: [
      authorize(ctx, 'admin.keys.orchestrate'),
      ...json,
      async (req, res) => {
        const result = await orchestrate(
          ctx,
          { tenantId: tenantParam(req), actor: actorOf(req) },
          req.body ?? {},
        );
        res.status(result.status).json(result.body);
      },
    ],
  });
  route(router, '/orchestrate/:operationId', {
    get: [
      authorize(ctx, 'admin.keys.orchestrate'),
      async (req, res) => {
        res.json(await orchestration(ctx, tenantParam(req), param(req, 'operationId')));
      },
    ],
  });

  route(router, '/:kid', {
    get: [
      authorize(ctx, 'admin.keys.read'),
      async (req, res) => {
        res.json(await readKey(ctx, tenantParam(req), param(req, 'kid')));
      },
    ],
    // Key settings (contract 8): description, rotationPeriodDays, minDecryptionVersion.
    patch: [
      authorize(ctx, 'admin.keys.update'),
      ...json,
      async (req, res) => {
        const patch = readSettingsPatch(req.body ?? {});
        const tenantId = tenantParam(req);
        const row = await applySettings(
          ctx,
          tenantId,
          param(req, 'kid'),
          patch,
          async (t) => (await tenantPolicy(ctx, t)).effective.rotationPeriodDays,
        );
        auditChange(ctx, req, 'key.update', row.kid as string, { ...patch });
        res.json(await readKey(ctx, tenantId, row.kid as string));
      },
    ],
  });

  route(router, '/:kid/public', {
    // Every retained version's public key as JWK and PEM (contract 8); never private material.
    get: [
      authorize(ctx, 'admin.keys.export-public'),
      async (req, res) => {
        res.json(await publicKeysOf(ctx, tenantParam(req), param(req, 'kid'), { runtime: false }));
      },
    ],
  });

  for (const action of [
    'rotate',
    'suspend',
    'resume',
    'revoke',
    'archive',
  ] as const satisfies readonly KeyAction[]) {
    const check = authorize(
      ctx,
      action === 'resume' ? 'admin.keys.suspend' : `admin.keys.${action}`,
    );
    // The catalogue's admin.keys.resume also resumes (it was unused); admin.keys.suspend still does.
    const allowed: RequestHandler =
      action === 'resume'
        ? (req, res, next) =>
            req.auth.permissions.includes('admin.keys.resume') ? next() : check(req, res, next)
        : check;
    route(router, `/:kid/${action}`, {
      post: [
        allowed,
        async (req, res) => {
          const key = await changeKey(
            ctx,
            tenantParam(req),
            param(req, 'kid'),
            action,
            actorOf(req),
          );
          auditChange(ctx, req, `key.${action}`, key.kid, {
            state: key.state,
            version: key.currentVersion,
          });
          res.json(key);
        },
      ],
    });
  }
  return router;
}
