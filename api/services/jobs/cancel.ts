/**
 * Cancelling jobs. A job still waiting is removed from the queue; a running one is told to stop
 * through a Redis channel every worker listens on (its processor aborts, the partial upload is
 * dropped, so no output appears). Either way a tombstone records the cancel, so the job's status
 * stays readable and a worker that picks the job up in the same instant refuses it.
 */
import type { AppContext } from '../../context.ts';
import { redisKeys } from '../../../shared/queues/index.ts';
import { onQueue, type JobsProducer } from './producer.ts';
import {
  batchChildIds,
  batchView,
  fetchJobs,
  readBatchRecord,
  readConvert,
  type ConvertJob,
  type Tombstone,
} from './view.ts';
import { problem } from '../../../shared/errors/index.ts';
import type { BatchView, ConvertView } from '../../schemas/jobs.ts';

const WAITING = new Set(['waiting', 'wait', 'delayed', 'prioritized', 'waiting-children']);

/** Stops one job (it belongs to `tenantId`: checked by the caller). Finished jobs are left alone. */
async function stopJob(rt: JobsProducer, job: ConvertJob): Promise<'stopped' | 'finished'> {
  const state = await job.getState();
  if (state === 'completed' || state === 'failed') return 'finished';
  const p = rt.settings.prefix;
  const tomb: Tombstone = {
    tenantId: job.data.tenantId,
    sourceKey: job.data.source.key,
    at: new Date().toISOString(),
  };
  await rt.redis.set(
    redisKeys.cancelled(p, job.id!),
    JSON.stringify(tomb),
    'EX',
    rt.settings.retentionSeconds,
  );
  if (WAITING.has(state)) {
    try {
      await job.remove();
      return 'stopped';
    } catch {
      // A worker took it in the meantime (it holds the lock): stop it like a running job.
    }
  }
  await rt.redis.publish(redisKeys.cancelChannel(p), job.id!);
  return 'stopped';
}

/** Cancels a conversion; null when the tenant has no such job. A finished job answers 409. */
export async function cancelConvert(
  ctx: AppContext,
  rt: JobsProducer,
  tenantId: string,
  id: string,
): Promise<ConvertView | null> {
  return onQueue(ctx, 'cancel', async () => {
    const job = (await rt.queue.getJob(id)) as ConvertJob | undefined;
    if (!job) return readConvert(rt, tenantId, id);
    if (job.data.tenantId !== tenantId) return null;
    if ((await stopJob(rt, job)) === 'finished') {
      const view = await readConvert(rt, tenantId, id);
      if (view?.state === 'cancelled') return view;
      throw problem(
        'job_not_finished',
        `the job has already ${view?.state ?? 'finished'}; there is nothing to cancel`,
        { details: { state: view?.state } },
      );
    }
    return readConvert(rt, tenantId, id);
  });
}

/** Cancels every unfinished child of a batch; null when the tenant has no such batch. */
export async function cancelBatch(
  ctx: AppContext,
  rt: JobsProducer,
  tenantId: string,
  id: string,
): Promise<BatchView | null> {
  return onQueue(ctx, 'cancel batch', async () => {
    const record = await readBatchRecord(rt, id);
    if (!record || record.tenantId !== tenantId) return null;
    if (!record.cancelledAt) {
      const before = await batchView(rt, record);
      if (before.finishedAt)
        throw problem(
          'job_not_finished',
          `the batch has already ${before.state}; there is nothing to cancel`,
          { details: { state: before.state } },
        );
      const at = new Date().toISOString();
      await rt.redis.hset(redisKeys.batch(rt.settings.prefix, id), 'cancelledAt', at);
      const jobs = await fetchJobs(rt.queue, await batchChildIds(rt, id));
      for (const job of jobs) if (job) await stopJob(rt, job);
      record.cancelledAt = at;
    }
    return batchView(rt, record);
  });
}
