/**
 * The database handle: Postgres through DATABASE_URL, else the embedded PGlite (Postgres in
 * WASM) in DATA_DIR, in a process of its own (shared/db/embedded.ts). Both are reached through
 * the same `pg` client and run the same migrations and the same queries.
 */
import knexFactory, { type Knex } from 'knex';
import { migrationSource } from './migrations/index.ts';
import {
  EMBEDDED_PORT,
  embeddedSocketDir,
  startEmbeddedDatabase,
  type EmbeddedOptions,
} from './embedded.ts';

export type Db = Knex;

export interface DbOptions {
  databaseUrl?: string;
  /** Directory for PGlite; `null` keeps PGlite in memory (tests). */
  dataDir?: string | null;
  /** Told when a slow step of the opening ends (`ms` is its duration), so a start is never silent. */
  onStep?: (step: string, ms: number) => void;
  /** Told when the embedded database's process died on its own. */
  onEmbeddedExit?: EmbeddedOptions['onExit'];
  /** Runs once the database is reachable and before its migrations (the master keyring's check). */
  beforeMigrate?: (db: Knex) => Promise<void>;
  /**
   * Runs only these migrations (a backup's schema), in order, instead of all of them: a restore
   * loads the rows into the schema they were taken from, then runs the rest (migrateRest), so a
   * later migration moves them as it moved every live database's.
   */
  migrations?: readonly string[];
  /**
   * Without `databaseUrl`: connect to the embedded database that the API of `dataDir` serves
   * (embeddedSocketDir) instead of starting one; its migrations are the API's. The worker's way.
   */
  attachEmbedded?: boolean;
}

/** The `pg` connection to an embedded database's socket; one connection, as PGlite is one backend. */
function embeddedKnex(socketDir: string): Knex {
  return knexFactory({
    client: 'pg',
    connection: {
      host: socketDir,
      port: EMBEDDED_PORT,
      user: 'postgres',
      database: 'postgres',
      connectionTimeoutMillis: 5_000,
    },
    pool: { min: 1, max: 1 },
    acquireConnectionTimeout: 10_000,
  });
}

/**
 * Opens the database and runs pending migrations. The objection models are bound per call
 * (`Tenant.query(db)`), not here: one process may hold several databases (tests, tools).
 */
export async function openDatabase(opts: DbOptions): Promise<Db> {
  const onStep = opts.onStep ?? (() => undefined);
  let t0 = performance.now();
  let db: Knex;
  if (opts.databaseUrl) {
    // Bounded waits: with the database away a request answers 503 within seconds, never a minute.
    db = knexFactory({
      client: 'pg',
      connection: { connectionString: opts.databaseUrl, connectionTimeoutMillis: 5_000 },
      pool: { min: 0, max: 10 },
      acquireConnectionTimeout: 10_000,
    });
  } else if (opts.attachEmbedded) {
    const socketDir = opts.dataDir ? embeddedSocketDir(opts.dataDir) : null;
    if (!socketDir) throw new Error('no private directory for the embedded database socket');
    db = embeddedKnex(socketDir);
    try {
      await db.raw('select 1');
    } catch (err) {
      await db.destroy();
      throw new Error(
        `the embedded database of DATA_DIR ${opts.dataDir} is not reachable (${(err as Error).message}): start the API (npm start) with the same DATA_DIR first, or set DATABASE_URL`,
      );
    }
    if (opts.beforeMigrate) await checkedBefore(db, opts.beforeMigrate);
    return db;
  } else {
    const embedded = await startEmbeddedDatabase({
      dataDir: opts.dataDir ?? null,
      onExit: opts.onEmbeddedExit,
    });
    // The process ends after the pool.
    db = embeddedKnex(embedded.socketDir);
    // `db.destroy()` ends the client's pool, then the process (knex's own property is read-only).
    const client = db.client as { destroy(cb?: () => void): Promise<void> };
    const destroyPool = client.destroy.bind(client);
    client.destroy = async (cb?: () => void) => {
      await destroyPool();
      await embedded.close();
      cb?.();
    };
    onStep('embedded database open', Math.round(performance.now() - t0));
    t0 = performance.now();
  }
  if (opts.beforeMigrate) await checkedBefore(db, opts.beforeMigrate);
  if (opts.migrations) await migrateThrough(db, opts.migrations);
  else await db.migrate.latest({ migrationSource });
  onStep('migrations', Math.round(performance.now() - t0));
  return db;
}

/** Runs the pending migrations one by one while they are among `names`. */
async function migrateThrough(db: Knex, names: readonly string[]): Promise<void> {
  for (;;) {
    const [, pending] = (await db.migrate.list({ migrationSource })) as [
      unknown,
      Array<[string, unknown]>,
    ];
    if (pending.length === 0 || !names.includes(pending[0][0])) return;
    await db.migrate.up({ migrationSource });
  }
}

/** Runs every migration not yet run (after a restore into an older schema). */
export async function migrateRest(db: Knex): Promise<void> {
  await db.migrate.latest({ migrationSource });
}

/** Runs `check` on an open database, closing it when the check fails. */
async function checkedBefore(db: Knex, check: (db: Knex) => Promise<void>): Promise<void> {
  try {
    await check(db);
  } catch (err) {
    await db.destroy();
    throw err;
  }
}

/**
 * True when the database answers a query on one of Keyward's tables, named as every query names
 * it (unqualified): `select 1` also answered while the session could no longer find a table (an
 * emptied search_path), and readiness said ready while every API query failed.
 */
export async function databaseReachable(db: Db): Promise<boolean> {
  try {
    await db.raw('select 1 from tenants limit 1');
    return true;
  } catch {
    return false;
  }
}

/** Error codes of a database that is away or restarting (Node socket errors, SQLSTATE class 08 and 57P0x). */
const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  // The embedded database's socket while its process is being started again.
  'ENOENT',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  '57P01',
  '57P02',
  '57P03',
  '08000',
  '08001',
  '08003',
  '08004',
  '08006',
]);

/** True when `err` says the database cannot be reached now (not that a query was wrong). */
export function isDatabaseUnavailable(err: unknown): boolean {
  if (!err || typeof err !== 'object') return false;
  const e = err as { code?: unknown; message?: unknown; name?: unknown };
  if (typeof e.code === 'string' && UNAVAILABLE_CODES.has(e.code)) return true;
  const message = typeof e.message === 'string' ? e.message : '';
  return (
    e.name === 'KnexTimeoutError' ||
    /Connection terminated|Timeout acquiring a connection|connect ECONNREFUSED|Client has encountered a connection error/i.test(
      message,
    )
  );
}
