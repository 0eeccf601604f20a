/**
 * The queued side of migration (contract 6), mounted at /api/v3/migration behind authenticate:
 * PUT /uploads/{name} streams an input into the tenant's object storage; /jobs submits, reads,
 * lists the children of a batch, streams a result and cancels. The tenant always comes from the
 * token; another tenant's job answers 404, exactly like a missing one.
 */
import { Router, type Request } from 'express';
import { pipeline } from 'node:stream/promises';
import type { AppContext } from '../context.ts';
import { AppError, problem } from '../../shared/errors/index.ts';
import { isJobId, jobProblem, sourceVersionOf } from '../../shared/queues/index.ts';
import { tenantStore } from '../../shared/storage/index.ts';
import { route } from '../http/route.ts';
import { param } from '../http/params.ts';
import { pageParams } from '../http/pagination.ts';
import { actorOf, authorize } from '../middleware/authenticate.ts';
import { jsonBody } from '../middleware/body.ts';
import { apiRateLimit } from '../middleware/rate-limit.ts';
import { jobsRuntime, objectStoreOf, onQueue } from '../services/jobs/runtime.ts';
import { parseSubmit, submitBatch, submitConvert } from '../services/jobs/submit.ts';
import { batchChildren, batchView, childrenOffset, readBatchRecord, readConvert } from '../services/jobs/view.ts';
import { cancelBatch, cancelConvert } from '../services/jobs/cancel.ts';
import { abandonRaw, rawBody } from '../services/migration/streaming-http.ts';

const JOBS = '/api/v3/migration/jobs';

const notFound = (id: string) => problem('not_found', `no job ${id.slice(0, 64)} in this tenant`);

/** The job id of the path, checked for shape so junk never reaches Redis. */
function jobIdOf(req: Request): string {
  const id = param(req, 'id');
  if (!isJobId(id)) throw notFound(id);
  return id;
}

/** Creates the router. */
export function createJobsRouter(ctx: AppContext): Router {
  const router = Router();
  const json = jsonBody(ctx.config.jsonLimitBytes);
  const audit = (req: Request, action: string, target: string, details?: Record<string, unknown>) =>
    ctx.audit.record({ tenantId: req.auth.tenantId, actor: actorOf(req), action, outcome: 'success', target: target.slice(0, 512), details });

  route(router, '/uploads/*name', {
    put: [authorize(ctx, 'migration.uploads.write'), apiRateLimit(ctx, 'migration.uploads.write'), async (req, res) => {
      const name = param(req, 'name');
      let objects, info;
      try {
        objects = tenantStore(await objectStoreOf(ctx), req.auth.tenantId);
        // The request itself is the body: streamed into storage, visible only once complete. It
        // goes in as an iterator that leaves the socket alone when the store gives up (a store
        // destroys a Readable body on failure, which dropped the connection before the refusal
        // was written).
        info = await objects.put(name, rawBody(req), { contentType: req.headers['content-type'] });
      } catch (err) {
        abandonRaw(req, res);
        throw err;
      }
      audit(req, 'migration.upload', info.key, { size: info.size });
      res.status(201).json({ key: info.key, size: info.size, version: sourceVersionOf((await objects.head(info.key)) ?? info) });
    }],
  });

  route(router, '/jobs', {
    post: [authorize(ctx, 'migration.jobs.create'), apiRateLimit(ctx, 'migration.jobs.create'), ...json, async (req, res) => {
      const rt = await jobsRuntime(ctx);
      const body = parseSubmit(req.body);
      const view = body.kind === 'convert' ? await submitConvert(ctx, rt, req.auth.tenantId, body) : await submitBatch(ctx, rt, req.auth.tenantId, body);
      audit(req, 'migration.job.submit', view.id, { type: view.type, state: view.state });
      res.status(202).location(`${JOBS}/${view.id}`).json(view);
    }],
  });

  route(router, '/jobs/:id', {
    get: [authorize(ctx, 'migration.jobs.read'), apiRateLimit(ctx, 'migration.jobs.read'), async (req, res) => {
      const rt = await jobsRuntime(ctx);
      const id = jobIdOf(req);
      const view = await onQueue(ctx, 'read', async () => {
        if (id.startsWith('cv-')) return readConvert(rt, req.auth.tenantId, id);
        const record = await readBatchRecord(rt, id);
        return record && record.tenantId === req.auth.tenantId ? batchView(rt, record) : null;
      });
      if (!view) throw notFound(id);
      res.json(view);
    }],
    delete: [authorize(ctx, 'migration.jobs.cancel'), apiRateLimit(ctx, 'migration.jobs.cancel'), async (req, res) => {
      res.status(202).json(await cancel(req));
    }],
  });

  route(router, '/jobs/:id/cancel', {
    post: [authorize(ctx, 'migration.jobs.cancel'), apiRateLimit(ctx, 'migration.jobs.cancel'), async (req, res) => {
      res.status(202).json(await cancel(req));
    }],
  });

  async function cancel(req: Request) {
    const rt = await jobsRuntime(ctx);
    const id = jobIdOf(req);
    const view = id.startsWith('cv-') ? await cancelConvert(ctx, rt, req.auth.tenantId, id) : await cancelBatch(ctx, rt, req.auth.tenantId, id);
    if (!view) throw notFound(id);
    audit(req, 'migration.job.cancel', id, { state: view.state });
    return view;
  }

  route(router, '/jobs/:id/children', {
    get: [authorize(ctx, 'migration.jobs.read'), apiRateLimit(ctx, 'migration.jobs.read'), async (req, res) => {
      // The query is checked before the queue is asked, so a bad cursor is a 400 even when Redis is down.
      const { limit, cursor } = pageParams(req);
      const offset = childrenOffset(cursor);
      const rt = await jobsRuntime(ctx);
      const id = jobIdOf(req);
      const page = await onQueue(ctx, 'children', async () => {
        const record = id.startsWith('bt-') ? await readBatchRecord(rt, id) : null;
        return record && record.tenantId === req.auth.tenantId ? batchChildren(rt, record, offset, limit) : null;
      });
      if (!page) throw notFound(id);
      res.json(page);
    }],
  });

  route(router, '/jobs/:id/result', {
    get: [authorize(ctx, 'migration.jobs.result.read'), apiRateLimit(ctx, 'migration.jobs.result.read'), async (req, res) => {
      const rt = await jobsRuntime(ctx);
      const id = jobIdOf(req);
      if (id.startsWith('bt-')) {
        const record = await onQueue(ctx, 'read', () => readBatchRecord(rt, id));
        if (!record || record.tenantId !== req.auth.tenantId) throw notFound(id);
        throw jobProblem('job_not_finished', 'a batch has no single result; each child has one (GET .../children lists them with their ids)');
      }
      const view = await onQueue(ctx, 'read', () => readConvert(rt, req.auth.tenantId, id));
      if (!view) throw notFound(id);
      if (!view.result) throw jobProblem('job_not_finished', `the job is ${view.state}; a result exists only once it completed`, { state: view.state });
      const objects = tenantStore(await objectStoreOf(ctx), req.auth.tenantId);
      let body;
      try {
        body = await objects.get(view.result.key);
      } catch (err) {
        if (err instanceof AppError && err.code === 'not_found') throw problem('not_found', 'the result object no longer exists in storage');
        throw err;
      }
      res.status(200).type(view.result.contentType).setHeader('Content-Length', String(view.result.size));
      res.setHeader('Content-Disposition', `attachment; filename="${view.result.key.split('/').pop()!.replace(/[^\w.-]/g, '_')}"`);
      await pipeline(body, res);
    }],
  });

  return router;
}
