/**
 * Submitting conversions: one object, or every object under a prefix as a batch.
 * Ids are derived from tenant, source, source version, metadata and output, so a resubmission
 * lands on the same job; resubmitting a failed or cancelled job runs it again under that id.
 */
import type { JobsOptions } from 'bullmq';
import type { AppContext } from '../../context.ts';
import { problem } from '../../../shared/errors/index.ts';
import {
  assertObjectKey,
  assertPrefix,
  assertTenantWritable,
  tenantStore,
  type ObjectStore,
} from '../../../shared/storage/index.ts';
import {
  CONVERT_JOB,
  batchJobId,
  convertJobId,
  redisKeys,
  sourceVersionOf,
  type BatchRecord,
  type ConvertJobData,
} from '../../../shared/queues/index.ts';
import { onQueue, type JobsProducer } from './producer.ts';
import {
  batchView,
  convertView,
  fetchJobs,
  loadConvert,
  readBatchRecord,
  type ConvertJob,
} from './view.ts';
import type { BatchView, ConvertView, SubmitBody } from '../../schemas/jobs.ts';

/** A validated POST /jobs body. */
export type SubmitRequest =
  | { kind: 'convert'; key: string; metadata: Record<string, unknown>; outputPrefix: string }
  | {
      kind: 'batch';
      bucket?: string;
      prefix: string;
      metadata: Record<string, unknown>;
      outputPrefix: string;
    };

const MAX_METADATA_BYTES = 4096;
const ADD_CHUNK = 500;

const invalid = (message: string, field: string) =>
  problem('validation_failed', message, { details: { field } });
/**
 * The request a POST /jobs body makes, its shape checked by the row's schema: here what a schema
 * cannot say (no password in the stored metadata, its size, canonical keys and prefixes, the
 * output outside the reserved segment).
 */
export function parseSubmit(body: SubmitBody): SubmitRequest {
  const { source, output } = body;
  const metadata = (body.metadata ?? {}) as Record<string, unknown>;
  // A job's metadata is stored with the job and shown by GET: a password must never be.
  if ('password' in metadata)
    throw invalid(
      'metadata.password is not accepted by jobs, which store their metadata: convert a password-encrypted file with POST /api/v3/migration/stream/convert-pkcs7-to-jose',
      'metadata.password',
    );
  if (Buffer.byteLength(JSON.stringify(metadata)) > MAX_METADATA_BYTES)
    throw invalid(`metadata must be at most ${MAX_METADATA_BYTES} bytes of JSON`, 'metadata');
  const outputPrefix = assertTenantWritable(assertPrefix(output.prefix), 'prefix');
  if ('key' in source)
    return { kind: 'convert', key: assertObjectKey(source.key), metadata, outputPrefix };
  return {
    kind: 'batch',
    bucket: source.bucket,
    prefix: assertPrefix(source.prefix),
    metadata,
    outputPrefix,
  };
}

/** Job options of every conversion: retries with exponential backoff, bounded retention. */
export function jobOptions(rt: JobsProducer, jobId: string): JobsOptions {
  const age = rt.settings.retentionSeconds;
  return {
    jobId,
    attempts: rt.settings.attempts,
    backoff: { type: 'exponential', delay: rt.settings.backoffMs },
    removeOnComplete: { age },
    removeOnFail: { age },
  };
}

/** The part of a key below its prefix's folder: `in/a/x.p7m` under `in/` (or `in/a`) is `a/x.p7m`. */
function relativeTo(prefix: string, key: string): string {
  return key.slice(prefix.lastIndexOf('/') + 1);
}

/** A job's output key: a valid key the tenant may write (not below `.keyward/`, which a prefix can join into). */
const outputKey = (key: string): string => assertTenantWritable(assertObjectKey(key), 'key');

/** Adds a job, or brings back the existing one: failed and cancelled jobs run again. */
async function ensureJob(
  rt: JobsProducer,
  data: ConvertJobData,
  id: string,
  existing: ConvertJob | undefined,
): Promise<void> {
  if (existing) {
    if ((await existing.getState()) === 'failed') {
      await rt.redis.del(redisKeys.cancelled(rt.settings.prefix, id));
      await existing.retry('failed', { resetAttemptsMade: true, resetAttemptsStarted: true });
    }
    return;
  }
  await rt.redis.del(redisKeys.cancelled(rt.settings.prefix, id));
  await rt.queue.add(CONVERT_JOB, data, jobOptions(rt, id));
}

/** Submits one conversion; answers its view. */
export async function submitConvert(
  ctx: AppContext,
  rt: JobsProducer,
  tenantId: string,
  req: Extract<SubmitRequest, { kind: 'convert' }>,
  decrypt: ConvertJobData['decrypt'],
): Promise<ConvertView> {
  const objects = tenantStore(await ctx.objectStore.get(), tenantId);
  const info = await objects.head(req.key);
  if (!info)
    throw problem(
      'not_found',
      `no object at source.key ${req.key}; upload it first (PUT /api/v3/migration/uploads/{name})`,
    );
  const data: ConvertJobData = {
    tenantId,
    source: { key: req.key },
    sourceVersion: sourceVersionOf(info),
    metadata: req.metadata,
    output: { key: outputKey(req.outputPrefix + relativeTo(req.key, req.key)) },
    ...(decrypt ? { decrypt } : {}),
  };
  const id = convertJobId(data);
  return onQueue(ctx, 'submit', async () => {
    await ensureJob(rt, data, id, (await rt.queue.getJob(id)) as ConvertJob | undefined);
    const loaded = await loadConvert(rt, id);
    if (!loaded)
      throw problem(
        'queue_unavailable',
        'the job vanished right after it was added; submit it again',
      );
    return convertView(loaded.job, loaded.state, rt.baseUrl);
  });
}

/** Lists the objects of a batch, leaving out earlier results under the output prefix. */
async function listSources(
  ctx: AppContext,
  objects: ObjectStore,
  rt: JobsProducer,
  req: Extract<SubmitRequest, { kind: 'batch' }>,
): Promise<Array<{ key: string; version: string }>> {
  const out: Array<{ key: string; version: string }> = [];
  for await (const info of objects.list(req.prefix)) {
    if (req.outputPrefix !== '' && info.key.startsWith(req.outputPrefix)) continue;
    if (out.length >= rt.settings.maxBatchObjects) {
      throw problem(
        'unprocessable',
        `more than ${rt.settings.maxBatchObjects} objects under ${req.prefix}; split the batch into narrower prefixes (JOB_MAX_BATCH_OBJECTS)`,
      );
    }
    out.push({ key: info.key, version: sourceVersionOf(info) });
  }
  if (out.length === 0) throw problem('unprocessable', `no objects under prefix "${req.prefix}"`);
  ctx.logger.debug({ prefix: req.prefix, objects: out.length }, 'batch listed');
  return out;
}

/** Submits a batch over a prefix; answers its view. */
export async function submitBatch(
  ctx: AppContext,
  rt: JobsProducer,
  tenantId: string,
  req: Extract<SubmitRequest, { kind: 'batch' }>,
  decrypt: ConvertJobData['decrypt'],
): Promise<BatchView> {
  const bucket = ctx.config.s3Endpoint ? ctx.config.s3Bucket : undefined;
  if (req.bucket !== undefined && req.bucket !== bucket) {
    throw invalid(
      bucket
        ? `this service reads objects only from its own bucket "${bucket}" (under your tenant's area)`
        : 'this service keeps objects on local disk; leave source.bucket out',
      'source.bucket',
    );
  }
  const objects = tenantStore(await ctx.objectStore.get(), tenantId);
  const sources = await listSources(ctx, objects, rt, req);
  const children = sources.map(({ key, version }): { id: string; data: ConvertJobData } => {
    const data: ConvertJobData = {
      tenantId,
      source: { key },
      sourceVersion: version,
      metadata: req.metadata,
      output: { key: outputKey(req.outputPrefix + relativeTo(req.prefix, key)) },
      ...(decrypt ? { decrypt } : {}),
    };
    return { id: convertJobId(data), data };
  });
  const source = {
    ...(req.bucket !== undefined ? { bucket: req.bucket } : {}),
    prefix: req.prefix,
  };
  const id = batchJobId(
    tenantId,
    source,
    { prefix: req.outputPrefix },
    req.metadata,
    children.map((c) => c.id),
  );
  const p = rt.settings.prefix;
  return onQueue(ctx, 'submit batch', async () => {
    const existing = await readBatchRecord(rt, id);
    if (!existing) {
      // The record and its child list first, atomically: a crash before the children are all
      // added leaves a record without `submitted`, which the next identical submission completes.
      const record: BatchRecord = {
        id,
        tenantId,
        source,
        output: { prefix: req.outputPrefix },
        metadata: req.metadata,
        objectsTotal: children.length,
        createdAt: new Date().toISOString(),
        submitted: false,
      };
      const ttl = rt.settings.retentionSeconds * 4;
      const multi = rt.redis
        .multi()
        .del(redisKeys.batch(p, id), redisKeys.batchChildren(p, id))
        .hset(redisKeys.batch(p, id), 'record', JSON.stringify(record));
      for (let i = 0; i < children.length; i += ADD_CHUNK)
        multi.rpush(
          redisKeys.batchChildren(p, id),
          ...children.slice(i, i + ADD_CHUNK).map((c) => c.id),
        );
      await multi
        .expire(redisKeys.batch(p, id), ttl)
        .expire(redisKeys.batchChildren(p, id), ttl)
        .exec();
    } else if (existing.cancelledAt) {
      await rt.redis.hdel(redisKeys.batch(p, id), 'cancelledAt');
    }
    // Adding is idempotent per child id; a resubmission also runs failed or cancelled children again.
    for (let i = 0; i < children.length; i += ADD_CHUNK) {
      const chunk = children.slice(i, i + ADD_CHUNK);
      const jobs = existing
        ? await fetchJobs(
            rt.queue,
            chunk.map((c) => c.id),
          )
        : [];
      const fresh = chunk.filter((_c, j) => !jobs[j]);
      if (fresh.length > 0) {
        await rt.redis.del(...fresh.map((c) => redisKeys.cancelled(p, c.id)));
        await rt.queue.addBulk(
          fresh.map((c) => ({ name: CONVERT_JOB, data: c.data, opts: jobOptions(rt, c.id) })),
        );
      }
      await Promise.all(
        chunk.map((c, j) =>
          jobs[j] && jobs[j]!.finishedOn && !jobs[j]!.returnvalue
            ? ensureJob(rt, c.data, c.id, jobs[j])
            : undefined,
        ),
      );
    }
    await rt.redis.hset(redisKeys.batch(p, id), 'submitted', '1');
    const record = await readBatchRecord(rt, id);
    return batchView(rt, record!);
  });
}
