/**
 * The database handle: Postgres through DATABASE_URL, else the embedded PGlite (Postgres in
 * WASM) in DATA_DIR. Both run the same migrations and the same queries.
 */
import knexFactory, { type Knex } from 'knex';
import ClientPgLite from 'knex-pglite';
import { migrationSource } from './migrations/index.ts';
import { openPglite } from './pglite.ts';

export type Db = Knex;

export interface DbOptions {
  databaseUrl?: string;
  /** Directory for PGlite; `null` keeps PGlite in memory (tests). */
  dataDir?: string | null;
  /** Told when a slow step of the opening ends (`ms` is its duration), so a start is never silent. */
  onStep?: (step: string, ms: number) => void;
}

/**
 * Opens the database and runs pending migrations. The objection models are bound per call
 * (`Tenant.query(db)`), not here: one process may hold several databases (tests, tools).
 */
export async function openDatabase(opts: DbOptions): Promise<Db> {
  const onStep = opts.onStep ?? (() => undefined);
  let t0 = performance.now();
  const db = opts.databaseUrl
    ? // Bounded waits: with the database away a request answers 503 within seconds, never a minute.
      knexFactory({
        client: 'pg',
        connection: { connectionString: opts.databaseUrl, connectionTimeoutMillis: 5_000 },
        pool: { min: 0, max: 10 },
        acquireConnectionTimeout: 10_000,
      })
    : knexFactory({
        client: ClientPgLite,
        dialect: 'postgres',
        connection: { pglite: await openPglite(opts.dataDir) } as Knex.StaticConnectionConfig,
      });
  if (!opts.databaseUrl) {
    onStep('embedded database open', Math.round(performance.now() - t0));
    t0 = performance.now();
  }
  await db.migrate.latest({ migrationSource });
  onStep('migrations', Math.round(performance.now() - t0));
  return db;
}

/** True when the database answers a trivial query. */
export async function databaseReachable(db: Db): Promise<boolean> {
  try {
    await db.raw('select 1');
    return true;
  } catch {
    return false;
  }
}

/** Error codes of a database that is away or restarting (Node socket errors, SQLSTATE class 08 and 57P0x). */
const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
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
