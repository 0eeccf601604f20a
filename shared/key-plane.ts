/**
 * The key plane of a process: what both the API and the queue worker need to use a tenant's keys,
 * opened in one order by one function. The master keyring; the database, checked against the
 * keyring before anything is migrated or served; the master secrets sealed in it; the process's
 * Redis client and its one subscriber (the fan-out bus); the change feed over both; and the key
 * cache that the feed keeps current. Each process builds its own parts on top (the API its pools,
 * audit log, auth services; the worker its object store, audit log, BullMQ worker) and registers
 * their closers on the same list, so one `closers.close()` closes everything newest first.
 */
import type { Redis } from 'ioredis';
import type { Config } from './config/index.ts';
import { loadMasterKey, type MasterKey } from './crypto/master-key.ts';
import { openDatabase, type Db } from './db/knex.ts';
import { FanoutBus } from './fanout/bus.ts';
import { createChangeFeed, type ChangeFeed } from './fanout/change-feed.ts';
import { KeyCache } from './keys/cache.ts';
import { checkKeyring, loadMasterSecrets, type MasterSecrets } from './keys/sealed-items.ts';
import { flushLogger, type Logger } from './logger.ts';
import { Closers } from './closers.ts';

/** The opened key plane; `closers` closes it and whatever the process registered on top. */
export interface KeyPlane {
  masterKey: MasterKey;
  /** Secrets once derived from the master key, stored sealed so they outlive a rotation. */
  masterSecrets: MasterSecrets;
  db: Db;
  /** Present when the process connected one (REDIS_URL). */
  redis?: Redis;
  /** The process's one Redis subscriber and its named channels (a bus that never delivers without Redis). */
  fanout: FanoutBus;
  /**
   * Cross-instance changes. Not started: the process starts it (`changes.start()`) once all its
   * listeners are registered, so no change is missed by a listener registered late.
   */
  changes: ChangeFeed;
  /** Runtime key cache (hot path), invalidated by the change feed. */
  keys: KeyCache;
  /**
   * Closed newest first, once, then the log is written out; the plane's own parts are the
   * oldest, so they close last.
   */
  closers: Closers;
}

export interface KeyPlaneOptions {
  logger: Logger;
  /**
   * Where the database is without DATABASE_URL: `own` starts the embedded database of DATA_DIR
   * (the API), `attach` uses the one the API of DATA_DIR serves (the worker), `memory` keeps an
   * embedded one in memory (tests, benches).
   */
  embedded: 'own' | 'attach' | 'memory';
  /**
   * Connects the process's Redis client, after the database and before the bus; undefined
   * without Redis. Each process connects its own way (the API waits briefly and goes on without;
   * the worker's client queues commands for BullMQ). The plane closes it.
   */
  connectRedis: () => Promise<Redis | undefined>;
}

/**
 * Opens the key plane in its one order. A step that fails closes what the earlier ones opened
 * and throws (a ConfigError when the keyring does not open the database).
 */
export async function openKeyPlane(
  config: Pick<Config, 'masterKey' | 'dataDir' | 'databaseUrl'>,
  opts: KeyPlaneOptions,
): Promise<KeyPlane> {
  const { logger } = opts;
  const master = loadMasterKey(config.masterKey, config.dataDir);
  if (master.generated) {
    logger.warn(
      { path: master.path },
      'generated a master key into DATA_DIR; set KEYWARD_MASTER_KEY in production and keep a backup',
    );
  }
  const attach = !config.databaseUrl && opts.embedded === 'attach';
  logger.info(
    { startup: 'database' },
    config.databaseUrl
      ? 'opening the database'
      : attach
        ? 'opening the embedded database that the API of DATA_DIR serves'
        : 'opening the embedded database in DATA_DIR (its first start initialises it)',
  );
  const db = await openDatabase({
    databaseUrl: config.databaseUrl,
    dataDir: opts.embedded === 'memory' ? null : config.dataDir,
    attachEmbedded: attach,
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
  // Last: every line buffered so far (the access lines of the final requests) is written out.
  const closers = new Closers(logger, () => flushLogger(logger));
  closers.add('database', () => db.destroy());
  try {
    // The database opened under the generated key (it is new): from here on the key is kept.
    master.persist?.();
    const masterSecrets = await loadMasterSecrets(db, master.key);
    const redis = await opts.connectRedis();
    if (redis) closers.add('redis', () => redis.quit().catch(() => redis.disconnect()));
    const fanout = new FanoutBus(redis, logger);
    closers.add('fanout', () => fanout.close());
    const changes = await createChangeFeed(db, logger, fanout);
    closers.add('change feed', () => changes.close());
    const keys = new KeyCache(db, master.key, changes, logger);
    return { masterKey: master.key, masterSecrets, db, redis, fanout, changes, keys, closers };
  } catch (err) {
    await closers.close();
    throw err;
  }
}
