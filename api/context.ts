/**
 * Everything a request handler or service may use, built once per process and closed in
 * order. Tests build the same context on an in-memory database.
 */
import type { DestinationStream } from 'pino';
import type { Config } from '../shared/config/index.ts';
import { createLogger, type Logger } from '../shared/logger.ts';
import { openKeyPlane, type KeyPlane } from '../shared/key-plane.ts';
import { connectRedis } from '../shared/redis.ts';
import { createAccessLog, type AccessLog } from './http/access-log.ts';
import { createPool, type WorkPool } from './threads/pool.ts';
import { conversionRunner, type ConversionRunner } from './threads/conversions.ts';
import { createMetrics, type Metrics } from './metrics.ts';
import { createAuditLog, type AuditLog } from '../shared/audit/log.ts';
import { createDecryptionBudget, type DecryptionBudget } from '../shared/keys/decryption-budget.ts';
import { createAuthServices, type AuthServices } from './services/auth/index.ts';
import { batchedSigner } from './services/auth/token-signer.ts';
import { createBackgroundTasks, type BackgroundTasks } from './background.ts';
import { createRewrapper, type Rewrapper } from '../shared/keys/rewrap.ts';

/** Automatic key rotation (api/services/keys/rotation-scheduler.ts attaches it). */
export interface RotationScheduler {
  /** One pass: schedules unscheduled keys, rotates those due at `now`; answers how many it rotated. */
  runOnce(now?: Date): Promise<number>;
  /** Stops the timer and waits for a pass under way. */
  close(): Promise<void>;
}

/**
 * The key plane (db, masterKey, masterSecrets, redis, fanout, changes, keys, closers) and the
 * API's parts on top of it.
 */
export interface AppContext extends KeyPlane {
  config: Config;
  logger: Logger;
  /** One line per request (ACCESS_LOG, ACCESS_LOG_SAMPLE), on the logger's destination. */
  accessLog: AccessLog;
  pool: WorkPool;
  /** Where streamed conversions run: the event loop or the conversion threads (CONVERT_THREADS). */
  conversions: ConversionRunner;
  metrics: Metrics;
  audit: AuditLog;
  auth: AuthServices;
  /** The decryption-failure budget of every decrypting path (issue 24). */
  decryption: DecryptionBudget;
  /** Work requests start after answering (reset mails); shutdown waits for it. */
  background: BackgroundTasks;
  /** This instance's master-key rewrap (issue 28). */
  rewrap: Rewrapper;
  /** Automatic key rotation (contract 8); its timer runs when KEY_ROTATION_CHECK_MS > 0. */
  rotation?: RotationScheduler;
}

export interface ContextOptions {
  /** Keep PGlite in memory instead of DATA_DIR (tests). */
  inMemoryDatabase?: boolean;
  logDestination?: DestinationStream;
}

/**
 * Builds the API process's context: the logger, the key plane (master key, database, master
 * secrets, Redis, fan-out, change feed, key cache: shared/key-plane.ts) and the API's own parts
 * on top (pools, metrics, audit, auth, background tasks, rewrap), each registered on the plane's
 * closer list. A part that fails to open closes what was opened before it.
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
  // Closed first: what is under way still needs the database, the mailer and the audit log.
  const background = createBackgroundTasks(logger);
  closers.add('background tasks', () => background.close());
  const rewrap = createRewrapper(db, masterKey, { logger, metrics: metrics.domain });
  closers.add('master-key rewrap', () => rewrap.close());
  // Every listener is registered: from here on no change is missed.
  changes.start();
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
    metrics,
    audit,
    auth,
    decryption: createDecryptionBudget(config, { logger, metrics: metrics.domain, audit, redis }),
    background,
    rewrap,
  };
}

/**
 * Closes what the context opened, newest first, then writes out the log (shared/closers.ts); a
 * second call answers the first call's promise.
 */
export function closeContext(ctx: AppContext): Promise<void> {
  return ctx.closers.close();
}
