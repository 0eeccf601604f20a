/**
 * The queued side of migration (contract 6), /api/v3/migration/jobs: submits, reads, lists the
 * children of a batch, streams a result and cancels (uploads are in ./uploads.ts). The tenant
 * always comes from the token; another tenant's job answers 404, exactly like a missing one.
 */
import { Router, type Request } from 'express';
import { pipeline } from 'node:stream/promises';
import type { AppContext } from '../../../context.ts';
import { route } from '../../../http/route.ts';
import { param } from '../../../http/params.ts';
import { pageParams } from '../../../http/pagination.ts';
import { actorOf, authorize } from '../../../middleware/authenticate.ts';
import { jsonBody } from '../../../middleware/body.ts';
import { apiRateLimit } from '../../../middleware/rate-limit.ts';
import { problem } from '../../../../shared/errors/index.ts';
import {
  cancelJob,
  deleteJobResults,
  jobChildren,
  openJobResult,
  readJob,
  submitJob,
} from '../../../services/jobs/tenant-jobs.ts';

const JOBS = '/api/v3/migration/jobs';

/** Mounted at /api/v3/migration/jobs (after authentication). */
export function createJobsRouter(ctx: AppContext): Router {
  const router = Router();
  const json = jsonBody(ctx.config.jsonLimitBytes);
  const audit = (req: Request, action: string, target: string, details?: Record<string, unknown>) =>
    ctx.audit.record({
      tenantId: req.auth.tenantId,
      actor: actorOf(req),
      action,
      outcome: 'success',
      target: target.slice(0, 512),
      details,
    });

  route(router, '/', {
    post: [
      authorize(ctx, 'migration.jobs.create'),
      apiRateLimit(ctx, 'migration.jobs.create'),
      ...json,
      async (req, res) => {
        const view = await submitJob(ctx, req.auth, req.body);
        audit(req, 'migration.job.submit', view.id, { type: view.type, state: view.state });
        res.status(202).location(`${JOBS}/${view.id}`).json(view);
      },
    ],
  });

  route(router, '/:id', {
    get: [
      authorize(ctx, 'migration.jobs.read'),
      apiRateLimit(ctx, 'migration.jobs.read'),
      async (req, res) => {
        res.json(await readJob(ctx, req.auth.tenantId, param(req, 'id')));
      },
    ],
    delete: [
      authorize(ctx, 'migration.jobs.cancel'),
      apiRateLimit(ctx, 'migration.jobs.cancel'),
      async (req, res) => {
        res.status(202).json(await cancel(req));
      },
    ],
  });

  route(router, '/:id/cancel', {
    post: [
      authorize(ctx, 'migration.jobs.cancel'),
      apiRateLimit(ctx, 'migration.jobs.cancel'),
      async (req, res) => {
        res.status(202).json(await cancel(req));
      },
    ],
  });

  async function cancel(req: Request) {
    const view = await cancelJob(ctx, req.auth.tenantId, param(req, 'id'));
    audit(req, 'migration.job.cancel', view.id, { state: view.state });
    return view;
  }

  route(router, '/:id/children', {
    get: [
      authorize(ctx, 'migration.jobs.read'),
      apiRateLimit(ctx, 'migration.jobs.read'),
      async (req, res) => {
        res.json(await jobChildren(ctx, req.auth.tenantId, param(req, 'id'), pageParams(req)));
      },
    ],
  });

  route(router, '/:id/result', {
    delete: [
      authorize(ctx, 'migration.jobs.cancel'),
      apiRateLimit(ctx, 'migration.jobs.cancel'),
      async (req, res) => {
        const r = await deleteJobResults(ctx, req.auth.tenantId, param(req, 'id'));
        audit(req, 'migration.job.results.delete', r.id, {
          deleted: r.deleted.length,
          keys: r.deleted.slice(0, 50),
        });
        res.status(200).json(r);
      },
    ],
    get: [
      authorize(ctx, 'migration.jobs.result.read'),
      apiRateLimit(ctx, 'migration.jobs.result.read'),
      async (req, res) => {
        const object = req.query.object ?? 'result';
        if (object !== 'result' && object !== 'content')
          throw problem('validation_failed', 'object must be result or content');
        const result = await openJobResult(ctx, req.auth.tenantId, param(req, 'id'), object);
        res.status(200).type(result.contentType).setHeader('Content-Length', String(result.size));
        res.setHeader('Content-Disposition', `attachment; filename="${result.filename}"`);
        await pipeline(result.body, res);
      },
    ],
  });

  return router;
}
