/**
 * The use cases behind /api/v3/migration/jobs, for one tenant: submit, read, cancel,
 * list a batch's children, open a result. Another tenant's job is exactly a missing one (404),
 * and a malformed id is refused before Redis is asked.
 */
import type { Readable } from 'node:stream';
import type { AppContext } from '../../context.ts';
import { problem } from '../../../shared/errors/index.ts';
import { isJobId } from '../../../shared/queues/index.ts';
import { tenantStore } from '../../../shared/storage/index.ts';
import type { PageRequest } from '../../../shared/db/page.ts';
import { onQueue } from './producer.ts';
import { parseSubmit, submitBatch, submitConvert } from './submit.ts';
import type { AccessClaims } from '../auth/access-tokens.ts';
import { decryptingCaller } from '../crypto/decrypting-caller.ts';
import { openWritten } from '../migration/outputs.ts';
import { batchChildren, batchView, childrenOffset, readBatchRecord, readConvert } from './view.ts';
import { cancelBatch, cancelConvert } from './cancel.ts';
import type { BatchView, ConvertView, SubmitBody } from '../../schemas/jobs.ts';

const notFound = (id: string) => problem('not_found', `no job ${id.slice(0, 64)} in this tenant`);

/** The id, checked for shape so junk never reaches Redis. */
function jobId(id: string): string {
  if (!isJobId(id)) throw notFound(id);
  return id;
}

/** Submits a convert job or a batch from a request body. */
export async function submitJob(
  ctx: AppContext,
  claims: AccessClaims,
  body: SubmitBody,
): Promise<ConvertView | BatchView> {
  const rt = await ctx.jobs.get();
  const request = parseSubmit(body);
  // The jobs decrypt as their submitter may: the right travels with the job.
  const caller = decryptingCaller(claims);
  const decrypt = caller.mayDecrypt ? { principal: caller.principal } : undefined;
  return request.kind === 'convert'
    ? submitConvert(ctx, rt, claims.tenantId, request, decrypt)
    : submitBatch(ctx, rt, claims.tenantId, request, decrypt);
}

/** A job of the tenant (a convert job or a batch with its tally). */
export async function readJob(
  ctx: AppContext,
  tenantId: string,
  rawId: string,
): Promise<ConvertView | BatchView> {
  const rt = await ctx.jobs.get();
  const id = jobId(rawId);
  const view = await onQueue(ctx, 'read', async () => {
    if (id.startsWith('cv-')) return readConvert(rt, tenantId, id);
    const record = await readBatchRecord(rt, id);
    return record && record.tenantId === tenantId ? batchView(rt, record) : null;
  });
  if (!view) throw notFound(id);
  return view;
}

/** Cancels a job of the tenant (a batch: every child not finished); answers its view. */
export async function cancelJob(
  ctx: AppContext,
  tenantId: string,
  rawId: string,
): Promise<ConvertView | BatchView> {
  const rt = await ctx.jobs.get();
  const id = jobId(rawId);
  const view = id.startsWith('cv-')
    ? await cancelConvert(ctx, rt, tenantId, id)
    : await cancelBatch(ctx, rt, tenantId, id);
  if (!view) throw notFound(id);
  return view;
}

/** One page of a batch's children. */
export async function jobChildren(
  ctx: AppContext,
  tenantId: string,
  rawId: string,
  page: PageRequest,
): Promise<{ items: ConvertView[]; nextCursor: string | null }> {
  // The cursor is checked before the queue is asked, so a bad cursor is a 400 even when Redis is down.
  const offset = childrenOffset(page.cursor);
  const rt = await ctx.jobs.get();
  const id = jobId(rawId);
  const children = await onQueue(ctx, 'children', async () => {
    const record = id.startsWith('bt-') ? await readBatchRecord(rt, id) : null;
    return record && record.tenantId === tenantId
      ? batchChildren(rt, record, offset, page.limit)
      : null;
  });
  if (!children) throw notFound(id);
  return children;
}

/** A completed convert job's result: its bytes as a stream, with what the answer's headers say. */
export async function openJobResult(
  ctx: AppContext,
  tenantId: string,
  rawId: string,
  role: 'result' | 'content' = 'result',
): Promise<{ body: Readable; contentType: string; size: number; filename: string }> {
  const rt = await ctx.jobs.get();
  const id = jobId(rawId);
  if (id.startsWith('bt-')) {
    const record = await onQueue(ctx, 'read', () => readBatchRecord(rt, id));
    if (!record || record.tenantId !== tenantId) throw notFound(id);
    throw problem(
      'job_not_finished',
      'a batch has no single result; each child has one (GET .../children lists them with their ids)',
    );
  }
  const view = await onQueue(ctx, 'read', () => readConvert(rt, tenantId, id));
  if (!view) throw notFound(id);
  if (!view.result)
    throw problem(
      'job_not_finished',
      `the job is ${view.state}; a result exists only once it completed`,
      { details: { state: view.state } },
    );
  const written = view.result.objects.find((o) => o.role === role);
  if (!written)
    throw problem('not_found', `the job wrote no ${role} object (only a SignedData has content)`);
  return openWritten(ctx, tenantId, written, 'the result object no longer exists in storage');
}

/** Children read per page when a batch's results are deleted. */
const DELETE_PAGE = 200;

/**
 * Deletes every object a finished conversion wrote (result.objects: the JOSE result and, for a
 * SignedData, its content), or those of every child of a batch; answers the keys removed. Only
 * the tenant's own area is touched (tenantStore). A job that has not finished has nothing to
 * delete yet (job-not-finished); deleting twice finds nothing the second time.
 */
export async function deleteJobResults(
  ctx: AppContext,
  tenantId: string,
  rawId: string,
): Promise<{ id: string; deleted: string[] }> {
  const rt = await ctx.jobs.get();
  const id = jobId(rawId);
  const views: ConvertView[] = [];
  if (id.startsWith('bt-')) {
    const record = await onQueue(ctx, 'read', () => readBatchRecord(rt, id));
    if (!record || record.tenantId !== tenantId) throw notFound(id);
    for (let offset = 0; offset < record.objectsTotal; offset += DELETE_PAGE) {
      const page = await onQueue(ctx, 'children', () =>
        batchChildren(rt, record, offset, DELETE_PAGE),
      );
      views.push(...page.items);
      if (!page.nextCursor) break;
    }
  } else {
    const view = await onQueue(ctx, 'read', () => readConvert(rt, tenantId, id));
    if (!view) throw notFound(id);
    if (!['completed', 'failed', 'cancelled'].includes(view.state))
      throw problem(
        'job_not_finished',
        `the job is ${view.state}; its results exist once it finished`,
        {
          details: { state: view.state },
        },
      );
    views.push(view);
  }
  const objects = tenantStore(await ctx.objectStore.get(), tenantId);
  const deleted: string[] = [];
  for (const view of views) {
    for (const o of view.result?.objects ?? []) {
      if (!(await objects.head(o.key))) continue;
      await objects.delete(o.key);
      deleted.push(o.key);
    }
  }
  return { id, deleted };
}

/** Deletes one of the tenant's uploaded objects; not-found when it does not exist. */
export async function deleteUpload(
  ctx: AppContext,
  tenantId: string,
  key: string,
): Promise<{ key: string; size: number }> {
  const objects = tenantStore(await ctx.objectStore.get(), tenantId);
  const info = await objects.head(key);
  if (!info) throw problem('not_found', `no object ${key.slice(0, 256)} in this tenant's storage`);
  await objects.delete(key);
  return { key: info.key, size: info.size };
}
