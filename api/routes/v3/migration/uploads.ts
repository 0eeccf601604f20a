/**
 * PUT /api/v3/migration/uploads/{name} (contract 6): streams an input into the tenant's object
 * storage, for a job to read later; DELETE removes it (audited). The tenant always comes from the
 * token.
 */
import { Router } from 'express';
import type { AppContext } from '../../../context.ts';
import { sourceVersionOf } from '../../../../shared/queues/index.ts';
import { tenantStore } from '../../../../shared/storage/index.ts';
import { route } from '../../../http/route.ts';
import { param } from '../../../http/params.ts';
import { actorOf } from '../../../access/checks.ts';
import { authorize } from '../../../middleware/authenticate.ts';
import { deleteUpload } from '../../../services/jobs/tenant-jobs.ts';
import { apiRateLimit } from '../../../middleware/rate-limit.ts';
import { objectStoreOf } from '../../../services/jobs/producer.ts';
import { rawBody } from '../../../http/streaming.ts';
import { streamedOperation } from '../../../http/streamed-operation.ts';

/** Mounted at /api/v3/migration/uploads (after authentication). */
export function createUploadsRouter(ctx: AppContext): Router {
  const router = Router();
  route(router, '/*name', {
    put: [
      authorize(ctx, 'migration.uploads.write'),
      apiRateLimit(ctx, 'migration.uploads.write'),
      streamedOperation(ctx, 'migration.upload', async (op, req, res) => {
        const objects = tenantStore(await objectStoreOf(ctx), req.auth.tenantId);
        // The request itself is the body: streamed into storage, visible only once complete. It
        // goes in as an iterator that leaves the socket alone when the store gives up (a store
        // destroys a Readable body on failure, which dropped the connection before the refusal
        // was written).
        const info = await objects.put(param(req, 'name'), op.countIn(rawBody(req)), {
          contentType: req.headers['content-type'],
        });
        op.target = info.key.slice(0, 512);
        op.details = { size: info.size };
        const body = JSON.stringify({
          key: info.key,
          size: info.size,
          version: sourceVersionOf((await objects.head(info.key)) ?? info),
        });
        res.status(201).type('application/json').send(body);
        op.bytesOut = body.length;
      }),
    ],
    delete: [
      authorize(ctx, 'migration.uploads.write'),
      apiRateLimit(ctx, 'migration.uploads.write'),
      async (req, res) => {
        const r = await deleteUpload(ctx, req.auth.tenantId, param(req, 'name'));
        ctx.audit.record({
          tenantId: req.auth.tenantId,
          actor: actorOf(req),
          action: 'migration.upload.delete',
          target: r.key.slice(0, 512),
          outcome: 'success',
          details: { size: r.size },
        });
        res.status(204).end();
      },
    ],
  });
  return router;
}
