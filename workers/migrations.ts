/**
 * The worker process's part in durable migrations (docs/migrations.md): a BullMQ worker on the
 * `migrate` queue (listing steps and chunks, workers/jobs/migrate.ts), sharing the process's
 * slots between tenants as the convert queue does, and the sweep that puts back in the queue
 * what a crash or a Redis loss took out of it: at start, then every MIGRATION_SWEEP_INTERVAL_MS.
 */
import { Queue, Worker } from 'bullmq';
import type { Knex } from 'knex';
import type { Redis } from 'ioredis';
import type { Config } from '../shared/config/index.ts';
import type { Logger } from '../shared/logger.ts';
import type { DomainMetrics } from '../shared/metrics/index.ts';
import type { KeyResolver, SignerChecker } from '../shared/pkcs7/types.ts';
import type { ObjectStore } from '../shared/storage/index.ts';
import { connectionOptions, type QueueSettings } from '../shared/queues/index.ts';
import { MIGRATE_QUEUE, type MigrateJobData } from '../shared/migrations/index.ts';
import { sweepMigrations } from '../shared/migrations/schedule.ts';
import { onMigrationCompleted } from '../shared/migrations/completion.ts';
import { createMigrateProcessor, workerIdentity, type MigrateSettings } from './jobs/migrate.ts';
import { tenantShare, withTenantShare } from './tenant-share.ts';

export interface MigrationWorkerDeps {
  config: Config;
  settings: QueueSettings;
  db: Knex;
  redis: Redis;
  objects: ObjectStore;
  resolverFor(tenantId: string, decryptPrincipal: string | null): KeyResolver;
  checkSigners?: SignerChecker;
  logger: Logger;
  metrics?: Pick<DomainMetrics, 'conversion'>;
}

/** The migration settings of a validated configuration. */
export function migrateSettings(config: Config, settings: QueueSettings): MigrateSettings {
  return {
    prefix: settings.prefix,
    attempts: settings.attempts,
    backoffMs: settings.backoffMs,
    chunksAhead: config.migrationChunksAhead,
    chunkObjects: config.migrationChunkObjects,
    chunkBytes: config.migrationChunkBytes,
    objectConcurrency: config.migrationObjectConcurrency,
    leaseMs: config.migrationLeaseMs,
    tenantRate: config.migrationTenantRate,
  };
}

/** Starts the migrate worker and the sweep; `close` stops the sweep, then the worker, then the queue. */
export async function startMigrationWorker(d: MigrationWorkerDeps) {
  const { config, settings, logger } = d;
  const queue: Queue<MigrateJobData> = new Queue(MIGRATE_QUEUE, {
    connection: d.redis,
    prefix: settings.prefix,
  });
  queue.on('error', (err) => logger.debug({ err: err.message }, 'migrate queue error'));
  const ms = migrateSettings(config, settings);
  const identity = workerIdentity();
  const completed = (migrationId: string) =>
    onMigrationCompleted(
      { db: d.db, logger, objects: d.objects, resolverFor: d.resolverFor },
      migrationId,
    ).catch((err: Error) =>
      logger.error({ migrationId, err: err.message }, 'migration completion hook failed'),
    );
  const processor = createMigrateProcessor(
    {
      db: d.db,
      redis: d.redis,
      objects: d.objects,
      queue,
      settings: ms,
      resolverFor: d.resolverFor,
      ...(d.checkSigners ? { checkSigners: d.checkSigners } : {}),
      logger,
      ...(d.metrics ? { metrics: d.metrics } : {}),
      onCompleted: completed,
    },
    identity,
  );
  const perTenant = tenantShare(config.workerConcurrency, config.workerTenantConcurrency);
  const shared = withTenantShare(processor, {
    perTenant,
    delayMs: 2000,
    othersWaiting: async (tenantId) =>
      (await queue.getWaiting(0, 99)).some((j) => j !== undefined && j.data.tenantId !== tenantId),
  });
  const worker = new Worker<MigrateJobData>(MIGRATE_QUEUE, shared, {
    connection: connectionOptions(config.redisUrl!, true),
    prefix: settings.prefix,
    concurrency: config.workerConcurrency,
    lockDuration: settings.lockDurationMs,
    stalledInterval: settings.stalledIntervalMs,
    maxStalledCount: settings.maxStalled,
    autorun: false,
  });
  worker.on('error', (err) =>
    logger.error(
      { err: err.message },
      'migrate worker error (redis unreachable?); it reconnects on its own',
    ),
  );
  worker.on('failed', (job, err) => {
    if (job)
      logger.warn(
        { jobId: job.id, err: err.message },
        'migration job failed; it is retried or swept back',
      );
  });

  let sweeping: Promise<void> | null = null;
  const sweep = () => {
    sweeping ??= sweepMigrations(d.db, queue, ms)
      .then((done) => Promise.all(done.map(completed)).then(() => undefined))
      .catch((err: Error) =>
        logger.warn({ err: err.message }, 'migration sweep failed; the next one tries again'),
      )
      .finally(() => {
        sweeping = null;
      });
    return sweeping;
  };
  const timer = setInterval(() => void sweep(), config.migrationSweepIntervalMs);
  timer.unref();
  void worker
    .run()
    .catch((err: Error) =>
      logger.error({ err: err.message }, 'migrate worker stopped unexpectedly'),
    );
  await worker.waitUntilReady();
  void sweep();
  logger.info({ queue: MIGRATE_QUEUE, worker: identity }, 'migration worker ready');
  return {
    worker,
    async close() {
      clearInterval(timer);
      await sweeping;
      await worker.close();
      await queue.close();
    },
  };
}
