/**
 * Builds the API process's context (api/context.ts) and closes it in order: the one place that
 * imports what the context holds, so the services, which import the context's type, never
 * import its builders.
 */
import { createSecretKey } from 'node:crypto';
import type { DestinationStream } from 'pino';
import type { Config } from '../shared/config/index.ts';
import { createLogger, type Logger } from '../shared/logger.ts';
import { openKeyPlane, type KeyPlane } from '../shared/key-plane.ts';
import { connectRedis } from '../shared/redis.ts';
import { createAccessLog } from './http/access-log.ts';
import { createPool } from './threads/pool.ts';
import { conversionRunner } from './threads/conversions.ts';
import { createExpensiveWork } from './threads/expensive.ts';
import { WorkBudget } from '../shared/keys/work-budget.ts';
import { createMetrics } from './metrics.ts';
import { createAuditLog } from '../shared/audit/log.ts';
import { createDecryptionBudget } from '../shared/keys/decryption-budget.ts';
import { createAuthServices } from './services/auth/index.ts';
import { batchedSigner } from './services/auth/token-signer.ts';
import { createBackgroundTasks } from './background.ts';
import { Rewrapper } from '../shared/keys/rewrap.ts';
import { createTransitMounts } from './services/vault-transit/mounts.ts';
import { createAliasCache } from './services/aws-kms/aliases.ts';
import { createAccessKeyResolver } from './services/auth/access-keys.ts';
import { startJobsProducer, startObjectStore } from './services/jobs/producer.ts';
import { startMigrateQueue } from './services/migration/producer.ts';
import { LazyPart } from '../shared/lazy-part.ts';
import type { AppContext } from './context.ts';

export interface ContextOptions {
  /** Keep PGlite in memory instead of DATA_DIR (tests). */
  inMemoryDatabase?: boolean;
  logDestination?: DestinationStream;
}

/**
 * Builds the API process's context: the logger, the key plane (master key, database, master
 * secrets, Redis, fan-out, change feed, key cache: shared/key-plane.ts) and the API's own parts
 * on top (pools, metrics, audit, auth, Transit mounts, the alias and access-key caches,
 * background tasks, rewrap), each registered on the plane's closer list where it holds anything.
 * A part that fails to open closes what was opened before it.
 */
export async function createContext(
  config: Config,
  opts: ContextOptions = {},
): Promise<AppContext> {
  const logger = createLogger(config.logLevel, opts.logDestination);
  const plane = await openKeyPlane(config, {
    logger,
    embedded: opts.inMemoryDatabase ? 'memory' : 'own',
    connectRedis: async () => (config.redisUrl ? connectRedis(config.redisUrl, logger) : undefined),
  });
  try {
    return await withApiParts(config, logger, plane);
  } catch (err) {
    await plane.closers.close();
    throw err;
  }
}

/** The API's parts on top of the key plane; their closers run before the plane's. */
async function withApiParts(config: Config, logger: Logger, plane: KeyPlane): Promise<AppContext> {
  const { db, masterKey, masterSecrets, redis, changes, closers } = plane;
  const pool = createPool({ threads: config.poolThreads, maxQueue: config.poolMaxQueue });
  closers.add('worker pool', () => pool.close());
  const metrics = createMetrics(pool);
  const conversionPool =
    config.convertThreads > 0
      ? createPool({
          threads: config.convertThreads,
          maxQueue: config.poolMaxQueue,
          label: 'conversion pool',
        })
      : null;
  if (conversionPool) closers.add('conversion pool', () => conversionPool.close());
  const conversions = conversionRunner(conversionPool, config.convertThreadFrom);
  // Its own threads: a flood of key generations or derivations waits here, not in front of the
  // crypto pool's signatures or libuv's (docs/expensive-work.md).
  const expensivePool = createPool({
    threads: config.expensiveThreads,
    maxQueue: config.expensiveThreads,
    label: 'expensive-work pool',
  });
  closers.add('expensive-work pool', () => expensivePool.close());
  const expensive = createExpensiveWork({
    pool: expensivePool,
    threads: config.expensiveThreads,
    maxQueue: config.expensiveMaxQueue,
    budget: new WorkBudget({
      units: config.expensiveBudget,
      windowSeconds: config.expensiveWindowSeconds,
      redis,
    }),
  });
  const audit = createAuditLog(db, logger, { metrics: metrics.domain });
  closers.add('audit log', () => audit.close());
  const tokenSigner = batchedSigner(logger);
  closers.add('token signing thread', () => tokenSigner.close());
  const auth = await createAuthServices(
    config,
    db,
    masterKey,
    masterSecrets,
    logger,
    changes,
    tokenSigner.sign,
    redis,
  );
  closers.add('auth services', () => auth.close());
  const transitMounts = await createTransitMounts(db, logger, changes);
  closers.add('Vault Transit mounts', () => transitMounts.close());
  // Closed first: what is under way still needs the database, the mailer and the audit log.
  const background = createBackgroundTasks(logger);
  closers.add('background tasks', () => background.close());
  const rewrap = new Rewrapper(db, masterKey, { logger, metrics: metrics.domain });
  closers.add('master-key rewrap', () => rewrap.close());
  const aliases = createAliasCache(db, changes);
  const accessKeys = createAccessKeyResolver({ db, masterKey, logger, changes });
  // Every listener is registered: from here on no change is missed.
  changes.start();
  const parts = { config, logger, redis, closers };
  return {
    ...plane,
    config,
    logger,
    accessLog: createAccessLog(logger, {
      enabled: config.accessLog === 'on',
      sample: config.accessLogSample,
      slowMs: config.accessLogSlowMs,
    }),
    pool,
    conversions,
    expensive,
    metrics,
    audit,
    auth,
    contextKey: createSecretKey(masterSecrets.get('encryption-context')),
    decryption: createDecryptionBudget(config, { logger, metrics: metrics.domain, audit, redis }),
    background,
    rewrap,
    transitMounts,
    aliases,
    accessKeys,
    jobs: new LazyPart(() => startJobsProducer(parts)),
    migrateQueue: new LazyPart(() => startMigrateQueue(parts)),
    objectStore: new LazyPart(() => startObjectStore(parts)),
  };
}

/**
 * Closes what the context opened, newest first, then writes out the log (shared/closers.ts); a
 * second call answers the first call's promise.
 */
export function closeContext(ctx: AppContext): Promise<void> {
  return ctx.closers.close();
}
