/**
 * The worker process's start (its entry is workers/worker.ts, `npm run worker`): consumes the
 * `convert` queue. Opens only what a conversion needs: the key plane as the API opens it
 * (shared/key-plane.ts: master key, database, Redis, fan-out, change feed, key cache;
 * DATABASE_URL, else the embedded database of the API started with the same DATA_DIR), with one
 * subscriber connection (shared/fanout/bus.ts) for both the change feed and the cancel channel,
 * and the object store. Any number of these
 * processes may run on any number of machines; BullMQ hands each job to one of them and, when a
 * worker dies, gives the job to another once its lock expires (the stalled check).
 *
 * SIGTERM/SIGINT: stop taking jobs and let the running ones finish (worker.close()); when that
 * takes longer than SHUTDOWN_TIMEOUT_MS the running jobs are released back to the queue for
 * another worker. Then everything closes in order and the process exits 0.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { getPriority, setPriority } from 'node:os';
import { ConfigError, configOrExit, type Config } from '../shared/config/index.ts';
import { createLogger, flushLogger, type Logger } from '../shared/logger.ts';
import { openKeyPlane } from '../shared/key-plane.ts';
import type { Closers } from '../shared/closers.ts';
import {
  createObjectStore,
  FsObjectStore,
  objectStoreConfig,
  type ObjectStore,
} from '../shared/storage/index.ts';
import { S3ObjectStore } from '../shared/storage/s3-store.ts';
import { startRetentionSweeper } from './retention.ts';
import {
  CONVERT_QUEUE,
  connectionOptions,
  decodeProblem,
  queueSettings,
  redisKeys,
  type ConvertJobData,
  type ConvertJobResult,
  type QueueSettings,
} from '../shared/queues/index.ts';
import { tenantKeyResolver } from '../shared/keys/cms-resolver.ts';
import { createDecryptionBudget } from '../shared/keys/decryption-budget.ts';
import { createAuditLog } from '../shared/audit/log.ts';
import { CHANNELS } from '../shared/fanout/bus.ts';
import { CANCEL_REASON, SHUTDOWN_REASON, createConvertProcessor } from './jobs/convert.ts';
import { signerCheckPool } from './signer-pool.ts';
import { tenantShare, withTenantShare } from './tenant-share.ts';
import { startMigrationWorker } from './migrations.ts';

/** Waiting jobs a worker looks at to tell whether another tenant is waiting for a slot. */
const OTHERS_LOOKAHEAD = 100;
import { createWorkerMetrics, serveWorkerMetrics, type WorkerMetrics } from './metrics.ts';

function fail(message: string): never {
  console.error(`keyward worker: ${message}`);
  process.exit(2);
}

/** Checks what a worker cannot run without, with a message naming the variable. */
function requireSetup(config: Config): void {
  if (!config.redisUrl)
    fail('REDIS_URL is required: the worker consumes the BullMQ queue on Redis');
  if (!config.masterKey && !existsSync(join(config.dataDir, 'master.key'))) {
    fail(
      'KEYWARD_MASTER_KEY is required (or DATA_DIR/master.key shared with the API): it unlocks the tenant keys',
    );
  }
}

/**
 * The object store. A store that cannot be reached at start is not fatal: jobs retry with
 * backoff while it is away, which is what an operator wants during a storage outage.
 */
async function openObjectStore(config: Config, logger: Logger): Promise<ObjectStore> {
  const storage = objectStoreConfig(config, logger);
  try {
    return await createObjectStore(storage);
  } catch (err) {
    logger.warn(
      { err: (err as Error).message, endpoint: config.s3Endpoint },
      'object storage is not reachable yet; jobs will retry until it is',
    );
    return storage.s3
      ? new S3ObjectStore({ ...storage.s3, logger })
      : new FsObjectStore({ root: join(config.dataDir, 'objects') });
  }
}

/**
 * Lowers this process's scheduling priority to WORKER_NICE: every thread it has (on Linux a
 * priority is a thread's: the garbage collector's and libuv's threads are started before this
 * runs), and the threads started afterwards (the conversion and signer-check pools) inherit it
 * from the main thread. Beside the API on one machine a runtime request then takes a core before
 * a conversion does; a worker on a machine of its own loses nothing. Lowering needs no
 * privilege; a priority already lower is left as it is.
 */
function lowerPriority(nice: number, logger: Logger): void {
  if (nice === 0) return;
  let threads: number[];
  try {
    threads = readdirSync('/proc/self/task').map(Number);
  } catch {
    threads = [0]; // no /proc: the main thread (the process elsewhere)
  }
  try {
    for (const tid of threads) if (getPriority(tid) < nice) setPriority(tid, nice);
    logger.info({ nice: getPriority(), threads: threads.length }, 'worker scheduling priority');
  } catch (err) {
    logger.warn(
      { err: (err as Error).message },
      'could not lower the worker priority (WORKER_NICE)',
    );
  }
}

async function start(config: Config, settings: QueueSettings): Promise<void> {
  const logger = createLogger(config.logLevel).child({ role: 'worker' });
  lowerPriority(config.workerNice, logger);
  // Without DATABASE_URL the worker uses the embedded database of the API of its DATA_DIR,
  // through that database's socket (shared/db/embedded.ts), taking turns with the API.
  const plane = await openKeyPlane(config, {
    logger,
    embedded: 'attach',
    // Its own client, unlike the API's (shared/redis.ts): ioredis's defaults, two retries per command.
    connectRedis: async () => {
      const client = new Redis(config.redisUrl!, { maxRetriesPerRequest: 2 });
      client.on('error', (err) => logger.warn({ err: err.message }, 'redis connection error'));
      return client;
    },
  });
  const { db, keys, changes, fanout, closers } = plane;
  // REDIS_URL is required (requireSetup), so the plane holds the client connected above.
  const redis = plane.redis!;
  changes.start();
  const objects = await openObjectStore(config, logger);
  if (config.migrationObjectRetention > 0) {
    const sweeper = startRetentionSweeper(objects, config.migrationObjectRetention, logger);
    closers.add('retention sweeper', () => sweeper.close());
    logger.info(
      { retentionSeconds: config.migrationObjectRetention },
      'deleting tenant objects past MIGRATION_OBJECT_RETENTION',
    );
  }

  const metrics = createWorkerMetrics(logger);
  const audit = createAuditLog(db, logger, { metrics: metrics.domain });
  closers.add('audit log', () => audit.close());
  const budget = createDecryptionBudget(config, { logger, metrics: metrics.domain, audit, redis });
  const signerChecks = signerCheckPool(config.workerConcurrency);
  closers.add('signer check threads', () => signerChecks.close());
  const processor = createConvertProcessor({
    objects,
    checkSigners: signerChecks.checker,
    logger,
    metrics: metrics.domain,
    progressIntervalMs: settings.progressIntervalMs,
    resolverFor: ({ tenantId, decrypt }) =>
      tenantKeyResolver(
        { db, keys },
        tenantId,
        decrypt
          ? {
              caller: { tenantId, principal: decrypt.principal, mayDecrypt: true },
              budget,
              source: 'job',
            }
          : null,
      ),
    isCancelled: async (jobId) =>
      (await redis.exists(redisKeys.cancelled(settings.prefix, jobId))) === 1,
  });
  const migrations = await startMigrationWorker({
    config,
    settings,
    db,
    redis,
    objects,
    checkSigners: signerChecks.checker,
    logger,
    metrics: metrics.domain,
    resolverFor: (tenantId, principal) =>
      tenantKeyResolver(
        { db, keys },
        tenantId,
        principal
          ? { caller: { tenantId, principal, mayDecrypt: true }, budget, source: 'job' }
          : null,
      ),
  });
  // `depth` (below, before the worker runs) is the queue reader this asks.
  const perTenant = tenantShare(config.workerConcurrency, config.workerTenantConcurrency);
  const shared = withTenantShare(processor, {
    perTenant,
    // Long enough that a tenant's waiting jobs do not spin through the slot, short against a job.
    delayMs: 2000,
    // The next waiting jobs, looked at only when a tenant is past its share: the share yields a
    // slot to a tenant that is waiting, never to nobody.
    othersWaiting: async (tenantId) =>
      (await depth.getWaiting(0, OTHERS_LOOKAHEAD - 1)).some(
        (j) => j !== undefined && j.data.tenantId !== tenantId,
      ),
    onDeferred: (tenantId, jobId) =>
      logger.debug({ tenantId, jobId, perTenant }, "job put back: its tenant's share is running"),
  });
  const worker = new Worker<ConvertJobData, ConvertJobResult>(CONVERT_QUEUE, shared, {
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
      'worker error (redis unreachable?); it reconnects on its own',
    ),
  );
  worker.on('stalled', (jobId) =>
    logger.warn(
      { jobId },
      'job stalled: its worker stopped renewing the lock (died or blocked); it goes back to the queue',
    ),
  );
  worker.on('lockRenewalFailed', (jobIds) =>
    logger.warn({ jobIds }, 'could not renew job locks; another worker may take these jobs over'),
  );
  countJobs(worker, metrics);
  worker.on('failed', (job, err) => {
    if (job && job.finishedOn)
      logger.warn(
        {
          jobId: job.id,
          tenantId: job.data.tenantId,
          source: job.data.source.key,
          problem: decodeProblem(err.message).toJSON(),
        },
        'job failed for good',
      );
  });

  // Cancels from the API arrive on a channel of the bus; only the worker running the job acts on
  // them. Subscribed before the first job runs; a cancel of a job not yet running is its tombstone.
  await fanout.on(CHANNELS.jobCancel(settings.prefix), (jobId) => {
    if (worker.cancelJob(jobId, CANCEL_REASON))
      logger.info({ jobId }, 'cancelling running job at the request of the API');
  });

  // Queue depth for the metrics, read at each scrape over the worker's command connection.
  const depth = new Queue(CONVERT_QUEUE, { connection: redis, prefix: settings.prefix });
  // Its connection's errors are the worker's own, logged once above; unheard they would throw.
  depth.on('error', (err) => logger.debug({ err: err.message }, 'queue depth reader error'));
  closers.add('queue depth', () => depth.close());
  metrics.watchQueue(depth);
  await openMetricsPort(config, metrics, logger, () => worker.isRunning(), closers);

  void worker
    .run()
    .catch((err: Error) => logger.error({ err: err.message }, 'worker stopped unexpectedly'));
  await worker.waitUntilReady();
  logger.info(
    {
      queue: CONVERT_QUEUE,
      prefix: settings.prefix,
      concurrency: config.workerConcurrency,
      perTenant,
      storage: config.s3Endpoint
        ? `s3 ${config.s3Endpoint}/${config.s3Bucket}`
        : `directory ${join(config.dataDir, 'objects')}`,
    },
    'keyward worker ready',
  );

  let stopping: Promise<void> | null = null;
  const stop = (signal: string): Promise<void> => {
    stopping ??= (async () => {
      logger.info({ signal }, 'shutting down: finishing running jobs, taking no new ones');
      const release = setTimeout(() => {
        logger.warn(
          { afterMs: config.shutdownTimeoutMs },
          'running jobs did not finish in time: releasing them to other workers',
        );
        worker.cancelAllJobs(SHUTDOWN_REASON);
      }, config.shutdownTimeoutMs);
      const force = setTimeout(
        () => {
          logger.error('shutdown timed out; exiting');
          process.exit(1);
        },
        config.shutdownTimeoutMs * 2 + 5000,
      );
      force.unref();
      await Promise.all([worker.close(), migrations.close()]);
      clearTimeout(release);
      await closers.close();
      logger.info('worker stopped');
      // The log is buffered (shared/log-destination.ts): out before process.exit, in order.
      await flushLogger(logger);
      process.exit(0);
    })();
    return stopping;
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}

/** Counts every job that ends here, with its run time, by how it ended. */
function countJobs(worker: Worker<ConvertJobData, ConvertJobResult>, metrics: WorkerMetrics): void {
  const ranFor = (job: { processedOn?: number }) =>
    (Date.now() - (job.processedOn ?? Date.now())) / 1000;
  worker.on('completed', (job) => metrics.jobEnded(CONVERT_QUEUE, 'completed', ranFor(job)));
  worker.on('failed', (job, err) => {
    if (!job) return;
    const outcome =
      decodeProblem(err.message).code === 'job_cancelled'
        ? 'cancelled'
        : job.finishedOn
          ? 'failed'
          : 'retried';
    metrics.jobEnded(CONVERT_QUEUE, outcome, ranFor(job));
  });
}

/**
 * Opens WORKER_METRICS_PORT (unless 0). A port already taken (a second worker on the host) is
 * logged, naming the variable, and the worker goes on without it: jobs matter more than metrics.
 */
async function openMetricsPort(
  config: Config,
  metrics: WorkerMetrics,
  logger: Logger,
  running: () => boolean,
  closers: Closers,
): Promise<void> {
  if (config.workerMetricsPort === 0) return;
  try {
    const server = await serveWorkerMetrics(metrics, {
      host: config.workerMetricsHost,
      port: config.workerMetricsPort,
      running,
    });
    closers.add(
      'metrics port',
      () =>
        new Promise<void>((resolve) => {
          server.close(() => resolve());
          // A scraper's kept-alive connection must not hold the shutdown.
          server.closeAllConnections();
        }),
    );
    logger.info({ address: server.address() }, 'worker metrics and health listening');
  } catch (err) {
    logger.error(
      {
        err: (err as Error).message,
        host: config.workerMetricsHost,
        port: config.workerMetricsPort,
      },
      'WORKER_METRICS_PORT could not be opened; running without /metrics and /healthz (give each worker on a host its own port)',
    );
  }
}

const config = configOrExit('keyward worker');
const settings = queueSettings(config);
requireSetup(config);
try {
  await start(config, settings);
} catch (err) {
  // A variable that does not fit the data (a keyring that cannot open the database): exit 2,
  // as the API does; a restart would not help.
  if (err instanceof ConfigError) {
    console.error(`keyward worker: invalid configuration: ${err.message}`);
    process.exit(2);
  }
  // A dependency refused at start (database, Redis): say which, and let the supervisor restart us.
  console.error(`keyward worker: could not start: ${(err as Error).message}`);
  process.exit(1);
}
