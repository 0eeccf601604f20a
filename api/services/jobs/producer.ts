/**
 * What the jobs API needs beyond the context: the object store and the BullMQ producer, each
 * built on first use and closed with the context (its closers run newest first, so the queue
 * closes before Redis and the database). Built lazily so that an API without REDIS_URL or with
 * object storage briefly away still starts; the jobs endpoints then answer 503. BullMQ itself is
 * imported on first use too: an API that never serves a job does not carry its ~7 MB of heap.
 */
import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Config } from '../../../shared/config/index.ts';
import type { KeyPlane } from '../../../shared/key-plane.ts';
import type { Logger } from '../../../shared/logger.ts';
import { AppError, problem } from '../../../shared/errors/index.ts';
import {
  createObjectStore,
  objectStoreConfig,
  type ObjectStore,
} from '../../../shared/storage/index.ts';
import {
  CONVERT_QUEUE,
  connectionOptions,
  queueSettings,
  type ConvertJobData,
  type ConvertJobResult,
  type QueueSettings,
} from '../../../shared/queues/index.ts';

export type ConvertQueue = Queue<ConvertJobData, ConvertJobResult>;

/** The producer side of the queue. */
export interface JobsProducer {
  settings: QueueSettings;
  /** PUBLIC_BASE_URL: job problems render with it (RFC 7807 `type`). */
  baseUrl: string;
  queue: ConvertQueue;
  /** The context's Redis client: batch records, cancel tombstones and the cancel channel. */
  redis: Redis;
}

/** The queue producer; a queue-unavailable problem when REDIS_URL is not set. */
export async function startJobsProducer(
  ctx: Pick<KeyPlane, 'redis' | 'closers'> & { config: Config; logger: Logger },
): Promise<JobsProducer> {
  if (!ctx.config.redisUrl || !ctx.redis) {
    throw problem(
      'queue_unavailable',
      'queued jobs need Redis: set REDIS_URL and start at least one worker (npm run worker)',
    );
  }
  const { Queue } = await import('bullmq');
  const settings = queueSettings(ctx.config);
  const queue: ConvertQueue = new Queue<ConvertJobData, ConvertJobResult>(CONVERT_QUEUE, {
    connection: connectionOptions(ctx.config.redisUrl, false),
    prefix: settings.prefix,
  });
  // Without a listener an 'error' event would crash the process; Redis outages surface per request.
  queue.on('error', (err) =>
    ctx.logger.warn({ err: err.message }, 'job queue: redis connection error'),
  );
  ctx.closers.add('job queue', () => queue.close());
  return { settings, baseUrl: ctx.config.publicBaseUrl, queue, redis: ctx.redis };
}

/** The object store of the deployment (S3 when configured, else DATA_DIR/objects); retried after a failure. */
export const startObjectStore = (ctx: { config: Config; logger: Logger }): Promise<ObjectStore> =>
  createObjectStore(objectStoreConfig(ctx.config, ctx.logger));

/**
 * Runs a Redis or BullMQ call; a connection failure becomes the queue-unavailable problem (the
 * cause goes to the log), errors of the error tree pass through.
 */
export async function onQueue<T>(
  ctx: { logger: Logger },
  what: string,
  fn: () => Promise<T>,
): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    // Problems of the error tree and programming faults (TypeError...) are not outages.
    if (
      err instanceof AppError ||
      err instanceof TypeError ||
      err instanceof RangeError ||
      err instanceof SyntaxError
    )
      throw err;
    ctx.logger.warn({ err: (err as Error)?.message, op: what }, 'job queue call failed');
    throw problem('queue_unavailable', `the job queue is unreachable (${what}); try again shortly`);
  }
}
