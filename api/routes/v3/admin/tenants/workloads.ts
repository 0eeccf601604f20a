/** Workloads of a tenant: register (secret shown once), list, read, disable/enable, rotate secret, delete. */
import { Router } from 'express';
import type { AppContext } from '../../../../context.ts';
import { route } from '../../../../http/route.ts';
import { pageParams } from '../../../../http/pagination.ts';
import { actorOf, authorize } from '../../../../middleware/authenticate.ts';
import { auditChange, param, tenantParam, uuidParam } from '../../../../http/params.ts';
import { jsonBody } from '../../../../middleware/body.ts';
import {
  deleteWorkload,
  listWorkloads,
  readWorkload,
  registerWorkload,
  rotateWorkloadSecret,
  setWorkloadDisabled,
} from '../../../../services/admin/workloads.ts';
import {
  createAccessKey,
  deleteAccessKey,
  listAccessKeys,
} from '../../../../services/auth/access-keys.ts';
import { onlyKnown } from '../../../../../shared/validation/members.ts';

const WORKLOAD_MEMBERS: ReadonlySet<string> = new Set(['name', 'roleId']);
const SECRET_MEMBERS: ReadonlySet<string> = new Set(['graceSeconds']);
const NO_MEMBERS: ReadonlySet<string> = new Set();

/** Mounted at /api/v3/admin/tenants/:tenantId/workloads. */
export function createWorkloadsRouter(ctx: AppContext): Router {
  const router = uuidParam(Router({ mergeParams: true }), 'id', 'record');
  const json = jsonBody(ctx.config.jsonLimitBytes);

  route(router, '/', {
    get: [
      authorize(ctx, 'admin.workloads.read'),
      async (req, res) => {
        res.json(await listWorkloads(ctx.db, tenantParam(req), pageParams(req)));
      },
    ],
    post: [
      authorize(ctx, 'admin.workloads.create'),
      ...json,
      async (req, res) => {
        onlyKnown(req.body ?? {}, WORKLOAD_MEMBERS);
        const w = await registerWorkload(ctx, tenantParam(req), req.body ?? {});
        auditChange(ctx, req, 'workload.register', w.id);
        res.status(201).json(w);
      },
    ],
  });
  route(router, '/:id', {
    get: [
      authorize(ctx, 'admin.workloads.read'),
      async (req, res) => {
        res.json(await readWorkload(ctx.db, tenantParam(req), param(req, 'id')));
      },
    ],
    delete: [
      authorize(ctx, 'admin.workloads.delete'),
      async (req, res) => {
        await deleteWorkload(ctx, tenantParam(req), param(req, 'id'), actorOf(req));
        auditChange(ctx, req, 'workload.delete', param(req, 'id'));
        res.status(204).end();
      },
    ],
  });
  for (const [action, disabled] of [
    ['disable', true],
    ['enable', false],
  ] as const) {
    route(router, `/:id/${action}`, {
      post: [
        authorize(ctx, 'admin.workloads.disable'),
        async (req, res) => {
          const w = await setWorkloadDisabled(
            ctx,
            tenantParam(req),
            param(req, 'id'),
            disabled,
            actorOf(req),
          );
          auditChange(ctx, req, `workload.${action}`, w.id);
          res.json(w);
        },
      ],
    });
  }
  route(router, '/:id/secret', {
    post: [
      authorize(ctx, 'admin.workloads.rotate-secret'),
      ...json,
      async (req, res) => {
        onlyKnown(req.body ?? {}, SECRET_MEMBERS);
        const r = await rotateWorkloadSecret(
          ctx,
          tenantParam(req),
          param(req, 'id'),
          (req.body ?? {}).graceSeconds,
        );
        auditChange(ctx, req, 'workload.secret.rotate', param(req, 'id'));
        res.status(201).json(r);
      },
    ],
  });
  // AWS KMS API credentials (contract 10): the secret is answered once, by the POST.
  route(router, '/:id/access-keys', {
    get: [
      authorize(ctx, 'admin.workloads.read'),
      async (req, res) => {
        res.json(await listAccessKeys(ctx, tenantParam(req), param(req, 'id')));
      },
    ],
    post: [
      authorize(ctx, 'admin.workloads.rotate-secret'),
      ...json,
      async (req, res) => {
        onlyKnown(req.body ?? {}, NO_MEMBERS);
        const key = await createAccessKey(ctx, tenantParam(req), param(req, 'id'));
        auditChange(ctx, req, 'workload.access-key.create', key.accessKeyId);
        res.status(201).json(key);
      },
    ],
  });
  route(router, '/:id/access-keys/:accessKeyId', {
    delete: [
      authorize(ctx, 'admin.workloads.rotate-secret'),
      async (req, res) => {
        const accessKeyId = param(req, 'accessKeyId');
        await deleteAccessKey(ctx, tenantParam(req), param(req, 'id'), accessKeyId);
        auditChange(ctx, req, 'workload.access-key.delete', accessKeyId);
        res.status(204).end();
      },
    ],
  });
  return router;
}
