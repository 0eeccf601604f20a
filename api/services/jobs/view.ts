/**
 * How jobs look through the API: a state, progress in bytes and objects, the result
 * object or the problem that failed it. A conversion's state comes from BullMQ; a batch's from
 * its children, read in chunks so a batch of thousands costs a few pipelined round trips.
 */
import type { Job } from 'bullmq';
import {
  decodeProblem,
  redisKeys,
  type BatchRecord,
  type ConvertJobData,
  type ConvertJobResult,
  type ConvertProgress,
} from '../../../shared/queues/index.ts';
import type { ConvertQueue, JobsProducer } from './producer.ts';
import { AppError, problemDocument, type ProblemDocument } from '../../../shared/errors/index.ts';
import type { BatchView, ConvertView, ProgressView as Progress } from '../../schemas/jobs.ts';

export type ConvertJob = Job<ConvertJobData, ConvertJobResult>;

/** Public job states. `retrying` waits for its backoff after a transient fault. */
export type JobState =
  'queued' | 'active' | 'retrying' | 'cancelling' | 'completed' | 'failed' | 'cancelled';

/** A cancel request recorded for a job (the job itself may be gone). */
export interface Tombstone {
  tenantId: string;
  sourceKey: string;
  at: string;
}

const iso = (ms: number | undefined | null): string | null =>
  ms ? new Date(ms).toISOString() : null;

/** A job's problem in the one RFC 7807 shape; its message was made safe by the worker that recorded it. */
const jobProblem = (error: AppError, baseUrl: string): ProblemDocument =>
  problemDocument(error, baseUrl, { safeMessage: true });
const CHUNK = 1000;
const MAX_FAILURES_SHOWN = 50;

function bytesOf(job: ConvertJob): { bytesRead: number; bytesWritten: number } {
  if (job.returnvalue)
    return { bytesRead: job.returnvalue.bytesRead ?? 0, bytesWritten: job.returnvalue.size };
  const p = job.progress as Partial<ConvertProgress> | number;
  return typeof p === 'object' && p
    ? { bytesRead: p.bytesRead ?? 0, bytesWritten: p.bytesWritten ?? 0 }
    : { bytesRead: 0, bytesWritten: 0 };
}

/** Completed, failed or still to run, from the job's own fields (no extra round trip). */
function outcomeOf(job: ConvertJob): 'completed' | 'failed' | 'pending' {
  if (job.returnvalue) return 'completed';
  return job.finishedOn ? 'failed' : 'pending';
}

/**
 * The public state of a conversion. The job's own fields win over `bullState` (read just before
 * the job, see loadConvert): a job that finished in between already carries its outcome.
 */
export function publicState(
  job: ConvertJob,
  bullState: string,
  cancelRequested: boolean,
): JobState {
  const outcome = outcomeOf(job);
  if (outcome === 'completed') return 'completed';
  if (outcome === 'failed')
    return decodeProblem(job.failedReason).code === 'job_cancelled' ? 'cancelled' : 'failed';
  switch (bullState) {
    case 'active':
      return cancelRequested ? 'cancelling' : 'active';
    case 'delayed':
      return cancelRequested ? 'cancelling' : 'retrying';
    default:
      return cancelRequested ? 'cancelling' : job.attemptsMade > 0 ? 'retrying' : 'queued';
  }
}

/** Reads a job's state and then the job itself, so the fields are never older than the state. */
export async function loadConvert(
  rt: JobsProducer,
  id: string,
): Promise<{ job: ConvertJob; state: JobState } | null> {
  const [bullState, tomb] = await Promise.all([rt.queue.getJobState(id), readTombstone(rt, id)]);
  const job = (await rt.queue.getJob(id)) as ConvertJob | undefined;
  return job ? { job, state: publicState(job, bullState, tomb !== null) } : null;
}

/** The view of one conversion job. */
export function convertView(job: ConvertJob, state: JobState, baseUrl: string): ConvertView {
  const finished = state === 'completed' || state === 'failed' || state === 'cancelled';
  const problem =
    state === 'failed' || state === 'cancelled'
      ? jobProblem(decodeProblem(job.failedReason), baseUrl)
      : null;
  const result = job.returnvalue
    ? {
        key: job.returnvalue.key,
        size: job.returnvalue.size,
        contentType: job.returnvalue.contentType,
        objects: job.returnvalue.objects ?? [
          {
            role: 'result' as const,
            key: job.returnvalue.key,
            size: job.returnvalue.size,
            contentType: job.returnvalue.contentType,
          },
        ],
      }
    : null;
  return {
    id: job.id!,
    type: 'convert',
    state,
    source: { key: job.data.source.key, version: job.data.sourceVersion },
    output: { key: result?.key ?? null },
    progress: {
      ...bytesOf(job),
      objectsDone: state === 'completed' ? 1 : 0,
      objectsFailed: finished && state !== 'completed' ? 1 : 0,
      objectsTotal: 1,
    },
    attempts: { made: job.attemptsMade, max: job.opts.attempts ?? 1 },
    result,
    problem,
    ...(!finished && job.failedReason
      ? { lastProblem: jobProblem(decodeProblem(job.failedReason), baseUrl) }
      : {}),
    createdAt: new Date(job.timestamp).toISOString(),
    startedAt: iso(job.processedOn),
    finishedAt: finished ? (iso(job.finishedOn) ?? new Date().toISOString()) : null,
  };
}

/** The view of a job no longer in the queue: cancelled before it ran, or past its retention period. */
export function goneView(
  id: string,
  t: Tombstone | null,
  fallback: { sourceKey: string; at: string },
  baseUrl: string,
): ConvertView {
  const problem = jobProblem(
    t
      ? new AppError('job_cancelled', 'the job was cancelled before it ran')
      : new AppError('not_found', 'the job is past its retention period (JOB_RETENTION_SECONDS)'),
    baseUrl,
  );
  const at = t?.at ?? fallback.at;
  return {
    id,
    type: 'convert',
    state: t ? 'cancelled' : 'failed',
    source: { key: t?.sourceKey ?? fallback.sourceKey, version: '' },
    output: { key: null },
    progress: { bytesRead: 0, bytesWritten: 0, objectsDone: 0, objectsFailed: 1, objectsTotal: 1 },
    attempts: { made: 0, max: 0 },
    result: null,
    problem,
    createdAt: at,
    startedAt: null,
    finishedAt: at,
  };
}

/** Reads the cancel tombstone of a job, if any. */
export async function readTombstone(rt: JobsProducer, id: string): Promise<Tombstone | null> {
  const raw = await rt.redis.get(redisKeys.cancelled(rt.settings.prefix, id));
  return raw ? (JSON.parse(raw) as Tombstone) : null;
}

/** The conversion job's view for a tenant, or null when the tenant has no such job. */
export async function readConvert(
  rt: JobsProducer,
  tenantId: string,
  id: string,
): Promise<ConvertView | null> {
  const loaded = await loadConvert(rt, id);
  if (!loaded) {
    const tomb = await readTombstone(rt, id);
    return tomb && tomb.tenantId === tenantId
      ? goneView(id, tomb, { sourceKey: tomb.sourceKey, at: tomb.at }, rt.baseUrl)
      : null;
  }
  return loaded.job.data.tenantId === tenantId
    ? convertView(loaded.job, loaded.state, rt.baseUrl)
    : null;
}

/** Reads a batch record; null when missing. */
export async function readBatchRecord(rt: JobsProducer, id: string): Promise<BatchRecord | null> {
  const h = await rt.redis.hgetall(redisKeys.batch(rt.settings.prefix, id));
  if (!h.record) return null;
  return {
    ...(JSON.parse(h.record) as BatchRecord),
    submitted: h.submitted === '1',
    ...(h.cancelledAt ? { cancelledAt: h.cancelledAt } : {}),
  };
}

/** Child job ids of a batch, `start` to `end` inclusive (-1: to the end). */
export function batchChildIds(
  rt: JobsProducer,
  id: string,
  start = 0,
  end = -1,
): Promise<string[]> {
  return rt.redis.lrange(redisKeys.batchChildren(rt.settings.prefix, id), start, end);
}

/** Fetches jobs by id in chunks; missing ones come back undefined. */
export async function fetchJobs(
  queue: ConvertQueue,
  ids: string[],
): Promise<Array<ConvertJob | undefined>> {
  const out: Array<ConvertJob | undefined> = [];
  for (let i = 0; i < ids.length; i += CHUNK) {
    out.push(
      ...(await Promise.all(
        ids.slice(i, i + CHUNK).map((id) => queue.getJob(id) as Promise<ConvertJob | undefined>),
      )),
    );
  }
  return out;
}

/** The view of a batch, aggregated over its children. */
export async function batchView(rt: JobsProducer, record: BatchRecord): Promise<BatchView> {
  const ids = await batchChildIds(rt, record.id);
  const jobs = await fetchJobs(rt.queue, ids);
  const progress: Progress = {
    bytesRead: 0,
    bytesWritten: 0,
    objectsDone: 0,
    objectsFailed: 0,
    objectsTotal: record.objectsTotal,
  };
  const failures: BatchView['failures'] = [];
  let started = false;
  let lastFinish = 0;
  jobs.forEach((job, i) => {
    if (!job) {
      // Removed: cancelled before it ran, or expired past the retention period.
      if (record.cancelledAt || record.submitted) progress.objectsFailed += 1;
      return;
    }
    const b = bytesOf(job);
    progress.bytesRead += b.bytesRead;
    progress.bytesWritten += b.bytesWritten;
    if (job.processedOn) started = true;
    const outcome = outcomeOf(job);
    if (outcome === 'completed') progress.objectsDone += 1;
    if (outcome === 'failed') {
      progress.objectsFailed += 1;
      if (failures.length < MAX_FAILURES_SHOWN)
        failures.push({
          id: ids[i],
          source: { key: job.data.source.key },
          problem: jobProblem(decodeProblem(job.failedReason), rt.baseUrl),
        });
    }
    if (outcome !== 'pending') lastFinish = Math.max(lastFinish, job.finishedOn ?? 0);
  });
  const finished = progress.objectsDone + progress.objectsFailed >= record.objectsTotal;
  let state: JobState;
  if (finished)
    state = record.cancelledAt ? 'cancelled' : progress.objectsDone === 0 ? 'failed' : 'completed';
  else if (record.cancelledAt) state = 'cancelling';
  else state = started || progress.objectsDone + progress.objectsFailed > 0 ? 'active' : 'queued';
  return {
    id: record.id,
    type: 'batch',
    state,
    source: record.source,
    output: record.output,
    progress,
    failures,
    createdAt: record.createdAt,
    finishedAt: finished
      ? lastFinish
        ? new Date(lastFinish).toISOString()
        : (record.cancelledAt ?? null)
      : null,
    cancelledAt: record.cancelledAt ?? null,
  };
}

/**
 * The offset a children cursor carries (decoded from base64url by pageParams): the decimal
 * digits batchChildren issued, nothing else. Number() alone let '1e300' or '0x10' through, and
 * Redis LRANGE refused the value, which came out as 503 queue-unavailable instead of 400.
 */
export function childrenOffset(cursor: string | null): number {
  if (cursor === null) return 0;
  if (!/^(0|[1-9][0-9]{0,14})$/.test(cursor))
    throw new AppError('validation_failed', 'cursor is not one this endpoint issued');
  return Number(cursor);
}

/** One page of a batch's children with their full views. */
export async function batchChildren(
  rt: JobsProducer,
  record: BatchRecord,
  offset: number,
  limit: number,
): Promise<{ items: ConvertView[]; nextCursor: string | null }> {
  const ids = await batchChildIds(rt, record.id, offset, offset + limit - 1);
  const items = await Promise.all(
    ids.map(async (id) => {
      const loaded = await loadConvert(rt, id);
      if (!loaded)
        return goneView(
          id,
          await readTombstone(rt, id),
          { sourceKey: '', at: record.cancelledAt ?? record.createdAt },
          rt.baseUrl,
        );
      return convertView(loaded.job, loaded.state, rt.baseUrl);
    }),
  );
  const next =
    offset + ids.length < record.objectsTotal && ids.length === limit
      ? Buffer.from(String(offset + limit)).toString('base64url')
      : null;
  return { items, nextCursor: next };
}
