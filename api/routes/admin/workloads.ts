/** Workloads of a tenant: register (secret shown once), list, read, disable/enable, rotate secret, delete. */
import { Router, type Request } from 'express';
import type { AppContext } from '../../context.ts';
import { AppError } from '../../../shared/errors/index.ts';
import { route } from '../../http/route.ts';
import { paginate } from '../../http/pagination.ts';
import { authorize } from '../../middleware/authenticate.ts';
import { auditChange, param, tenantParam } from '../../http/params.ts';
import { jsonBody } from '../../middleware/body.ts';
import { registerWorkload, rotateWorkloadSecret, setWorkloadDisabled, workloadView } from '../../services/identities.ts';
import { onlyKnown } from '../../../shared/validation/members.ts';

const WORKLOAD_MEMBERS: ReadonlySet<string> = new Set(['name', 'roleId']);
const SECRET_MEMBERS: ReadonlySet<string> = new Set(['graceSeconds']);

/** Mounted at /api/v3/admin/tenants/:tenantId/workloads. */
export function createWorkloadsRouter(ctx: AppContext): Router {
  const router = Router({ mergeParams: true });
  const json = jsonBody(ctx.config.jsonLimitBytes);
  const tenantOf = tenantParam;
  const audit = (req: Request, action: string, target: string) => auditChange(ctx, req, action, target);

  route(router, '/', {
    get: [authorize(ctx, 'admin.workloads.read'), async (req, res) => {
      res.json(await paginate(ctx.db('workloads').where({ tenant_id: tenantOf(req) }), 'id', req, workloadView));
    }],
    post: [authorize(ctx, 'admin.workloads.create'), ...json, async (req, res) => {
      onlyKnown(req.body ?? {}, WORKLOAD_MEMBERS);
      const w = await registerWorkload(ctx, tenantOf(req), req.body ?? {});
      audit(req, 'workload.register', w.id);
      res.status(201).json(w);
    }],
  });
  route(router, '/:id', {
    get: [authorize(ctx, 'admin.workloads.read'), async (req, res) => {
      const row = await ctx.db('workloads').where({ id: param(req, 'id'), tenant_id: tenantOf(req) }).first();
      if (!row) throw new AppError('not_found', 'no such workload');
      res.json(workloadView(row));
    }],
    delete: [authorize(ctx, 'admin.workloads.delete'), async (req, res) => {
      const row = await ctx.db('workloads').where({ id: param(req, 'id'), tenant_id: tenantOf(req) }).first();
      if (!row) throw new AppError('not_found', 'no such workload');
      await ctx.db('workloads').where({ id: row.id }).delete();
      await ctx.auth.secrets.invalidate(row.client_id);
      await ctx.auth.revokeSubjectTokens({ tenantId: row.tenant_id, sub: row.id, revokedBy: `${req.auth.kind}:${req.auth.sub}`, reason: 'workload deleted', strict: true });
      audit(req, 'workload.delete', row.id);
      res.status(204).end();
    }],
  });
  for (const [action, disabled] of [['disable', true], ['enable', false]] as const) {
    route(router, `/:id/${action}`, {
      post: [authorize(ctx, 'admin.workloads.disable'), async (req, res) => {
        const w = await setWorkloadDisabled(ctx, tenantOf(req), param(req, 'id'), disabled);
        audit(req, `workload.${action}`, w.id);
        res.json(w);
      }],
    });
  }
  route(router, '/:id/secret', {
    post: [authorize(ctx, 'admin.workloads.rotate-secret'), ...json, async (req, res) => {
      onlyKnown(req.body ?? {}, SECRET_MEMBERS);
      const grace = (req.body ?? {}).graceSeconds;
      if (grace !== undefined && (!Number.isInteger(grace) || grace < 0 || grace > 30 * 86400)) throw new AppError('validation_failed', 'graceSeconds must be an integer from 0 to 2592000');
      const r = await rotateWorkloadSecret(ctx, tenantOf(req), param(req, 'id'), grace);
      audit(req, 'workload.secret.rotate', param(req, 'id'));
      res.status(201).json(r);
    }],
  });
  return router;
}
