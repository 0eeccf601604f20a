/**
 * The API's side of the `migrate` queue: built on first use and closed with the context, as the
 * jobs producer is (api/services/jobs/producer.ts). A migration is a database row first; the
 * queue only carries what is in flight, so an API whose Redis is briefly away still creates,
 * reads, pauses and reports migrations, and the workers' sweep queues what it could not.
 */
import type { Queue } from 'bullmq';
import type { AppContext } from '../../context.ts';
import { problem } from '../../../shared/errors/index.ts';
import { connectionOptions, queueSettings } from '../../../shared/queues/index.ts';
import { MIGRATE_QUEUE, type MigrateJobData } from '../../../shared/migrations/index.ts';
import type { ScheduleOptions } from '../../../shared/migrations/schedule.ts';

/** The migrate queue; a queue-unavailable problem when REDIS_URL is not set. */
export async function startMigrateQueue(
  ctx: Pick<AppContext, 'config' | 'redis' | 'logger' | 'closers'>,
): Promise<Queue<MigrateJobData>> {
  if (!ctx.config.redisUrl || !ctx.redis)
    throw problem(
      'queue_unavailable',
      'migrations need Redis: set REDIS_URL and start at least one worker (npm run worker)',
    );
  const { Queue } = await import('bullmq');
  const queue = new Queue<MigrateJobData>(MIGRATE_QUEUE, {
    connection: connectionOptions(ctx.config.redisUrl, false),
    prefix: queueSettings(ctx.config).prefix,
  });
  queue.on('error', (err) =>
    ctx.logger.warn({ err: err.message }, 'migrate queue: redis connection error'),
  );
  ctx.closers.add('migrate queue', () => queue.close());
  return queue;
}

/** What the scheduling functions need of the configuration. */
export function scheduleOptions(ctx: AppContext): ScheduleOptions {
  const s = queueSettings(ctx.config);
  return {
    attempts: s.attempts,
    backoffMs: s.backoffMs,
    chunksAhead: ctx.config.migrationChunksAhead,
  };
}
