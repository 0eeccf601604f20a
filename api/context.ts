/**
 * Everything a request handler or service may use, built once per process and closed in
 * order. Tests build the same context on an in-memory database.
 */
import type { Redis } from 'ioredis';
import type { Config } from '../shared/config/index.ts';
import { openDatabase, type Db } from '../shared/db/knex.ts';
import { loadMasterKey, type MasterKey } from '../shared/crypto/master-key.ts';
import { createLogger, flushLogger, type Logger } from '../shared/logger.ts';
import { createAccessLog, type AccessLog } from './http/access-log.ts';
import {
  checkKeyring,
  loadMasterSecrets,
  type MasterSecrets,
} from '../shared/keys/sealed-items.ts';
import { createPool, type WorkPool } from './threads/pool.ts';
import { conversionRunner, type ConversionRunner } from './threads/conversions.ts';
import { createMetrics, type Metrics } from './metrics.ts';
import type { DestinationStream } from 'pino';
import { createAuditLog, type AuditLog } from '../shared/audit/log.ts';
import { createDecryptionBudget, type DecryptionBudget } from '../shared/keys/decryption-budget.ts';
import { createAuthServices, type AuthServices } from './services/auth/index.ts';
import { batchedSigner } from './services/auth/token-signer.ts';
import { createKeyCache, type KeyCache } from '../shared/keys/cache.ts';
import { createChangeFeed, type ChangeFeed } from '../shared/fanout/change-feed.ts';
import { connectRedis } from '../shared/redis.ts';
import { createFanoutBus, type FanoutBus } from '../shared/fanout/bus.ts';
import { createBackgroundTasks, type BackgroundTasks } from './background.ts';
import { createRewrapper, type Rewrapper } from '../shared/keys/rewrap.ts';

/** Automatic key rotation (api/services/keys/rotation-scheduler.ts attaches it). */
export interface RotationScheduler {
  /** One pass: schedules unscheduled keys, rotates those due at `now`; answers how many it rotated. */
  runOnce(now?: Date): Promise<number>;
  /** Stops the timer and waits for a pass under way. */
  close(): Promise<void>;
}

export interface AppContext {
  config: Config;
  logger: Logger;
  /** One line per request (ACCESS_LOG, ACCESS_LOG_SAMPLE), on the logger's destination. */
  accessLog: AccessLog;
  db: Db;
  pool: WorkPool;
  /** Where streamed conversions run: the event loop or the conversion threads (CONVERT_THREADS). */
  conversions: ConversionRunner;
  masterKey: MasterKey;
  /** Secrets once derived from the master key, stored sealed so they outlive a rotation. */
  masterSecrets: MasterSecrets;
  metrics: Metrics;
  audit: AuditLog;
  auth: AuthServices;
  /** The decryption-failure budget of every decrypting path (issue 24). */
  decryption: DecryptionBudget;
  /** Runtime key cache (hot path). */
  keys: KeyCache;
  /** Cross-instance changes (revocations, key states, credentials, signing keys, tenant status). */
  changes: ChangeFeed;
  /** Present when REDIS_URL is set. */
  redis?: Redis;
  /** The process's one Redis subscriber and its named channels (a bus that never delivers without Redis). */
  fanout: FanoutBus;
  /** Work requests start after answering (reset mails); shutdown waits for it. */
  background: BackgroundTasks;
  /** This instance's master-key rewrap (issue 28). */
  rewrap: Rewrapper;
  /** Automatic key rotation (contract 8); its timer runs when KEY_ROTATION_CHECK_MS > 0. */
  rotation?: RotationScheduler;
  /** Closers run in reverse order of registration by closeContext. */
  closers: Array<{ name: string; close: () => Promise<unknown> }>;
}

export interface ContextOptions {
  /** Keep PGlite in memory instead of DATA_DIR (tests). */
  inMemoryDatabase?: boolean;
  logDestination?: DestinationStream;
}

/** Builds the process context: logger, master key, database (migrated), pool, Redis. */
export async function createContext(
  config: Config,
  opts: ContextOptions = {},
): Promise<AppContext> {
  const logger = createLogger(config.logLevel, opts.logDestination);
  const master = loadMasterKey(config.masterKey, config.dataDir);
  if (master.generated) {
    logger.warn(
      { path: master.path },
      'generated a master key into DATA_DIR; set KEYWARD_MASTER_KEY in production and keep a backup',
    );
  }
  logger.info(
    { startup: 'database' },
    config.databaseUrl
      ? 'opening the database'
      : 'opening the embedded database in DATA_DIR (its first start initialises it)',
  );
  const db = await openDatabase({
    databaseUrl: config.databaseUrl,
    dataDir: opts.inMemoryDatabase ? null : config.dataDir,
    onStep: (step, ms) => logger.info({ startup: step, ms }, `start-up: ${step} done`),
    // Before anything is migrated, served or written: a wrong keyring stops the start here.
    beforeMigrate: (conn) => checkKeyring(conn, master.key),
    onEmbeddedExit: ({ code, signal, restarting }) =>
      logger.error(
        { code, signal, restarting },
        restarting
          ? 'the embedded database process ended unexpectedly; requests answer 503 until it is started again on DATA_DIR'
          : 'the in-memory embedded database process ended unexpectedly; its data is gone',
      ),
  });
  let masterSecrets: MasterSecrets;
  try {
    // The database opened under the generated key (it is new): from here on the key is kept.
    master.persist?.();
    masterSecrets = await loadMasterSecrets(db, master.key);
  } catch (err) {
    await db.destroy();
    throw err;
  }
  const pool = createPool({ threads: config.poolThreads, maxQueue: config.poolMaxQueue });
  const metrics = createMetrics(pool);
  const audit = createAuditLog(db, logger, { metrics: metrics.domain });
  const closers: AppContext['closers'] = [];
  closers.push({ name: 'database', close: () => db.destroy() });
  closers.push({ name: 'worker pool', close: () => pool.close() });
  const conversionPool =
    config.convertThreads > 0
      ? createPool({
          threads: config.convertThreads,
          maxQueue: config.poolMaxQueue,
          label: 'conversion pool',
        })
      : null;
  if (conversionPool)
    closers.push({ name: 'conversion pool', close: () => conversionPool.close() });
  const conversions = conversionRunner(conversionPool, config.convertThreadFrom);
  let redis: Redis | undefined;
  if (config.redisUrl) {
    const client = await connectRedis(config.redisUrl, logger);
    closers.push({ name: 'redis', close: () => client.quit().catch(() => client.disconnect()) });
    redis = client;
  }
  closers.push({ name: 'audit log', close: () => audit.close() });
  const fanout = createFanoutBus(redis, logger);
  closers.push({ name: 'fanout', close: () => fanout.close() });
  const changes = await createChangeFeed(db, logger, fanout);
  closers.push({ name: 'change feed', close: () => changes.close() });
  const tokenSigner = batchedSigner(logger);
  closers.push({ name: 'token signing thread', close: () => tokenSigner.close() });
  const auth = await createAuthServices(
    config,
    db,
    master.key,
    masterSecrets,
    logger,
    changes,
    tokenSigner.sign,
    redis,
  );
  closers.push({ name: 'auth services', close: () => auth.close() });
  // Closed first: what is under way still needs the database, the mailer and the audit log.
  const background = createBackgroundTasks(logger);
  closers.push({ name: 'background tasks', close: () => background.close() });
  const keys = createKeyCache(db, master.key, changes, logger);
  const rewrap = createRewrapper(db, master.key, { logger, metrics: metrics.domain });
  closers.push({ name: 'master-key rewrap', close: () => rewrap.close() });
  // Every listener is registered: from here on no change is missed.
  changes.start();
  const ctx: AppContext = {
    config,
    logger,
    accessLog: createAccessLog(logger, {
      enabled: config.accessLog === 'on',
      sample: config.accessLogSample,
      slowMs: config.accessLogSlowMs,
    }),
    db,
    pool,
    conversions,
    masterKey: master.key,
    masterSecrets,
    metrics,
    audit,
    auth,
    decryption: createDecryptionBudget(config, { logger, metrics: metrics.domain, audit, redis }),
    keys,
    changes,
    redis,
    fanout,
    background,
    rewrap,
    closers,
  };
  return ctx;
}

/** Closes what the context opened, newest first; safe to call twice. */
export async function closeContext(ctx: AppContext): Promise<void> {
  while (ctx.closers.length > 0) {
    const closer = ctx.closers.pop()!;
    try {
      await closer.close();
      ctx.logger.info({ part: closer.name }, 'closed');
    } catch (err) {
      ctx.logger.warn({ err: (err as Error).message, part: closer.name }, 'error while closing');
    }
  }
  // Last: every line buffered so far (the access lines of the final requests) is written out.
  await flushLogger(ctx.logger);
}
