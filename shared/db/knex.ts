/**
 * The database handle: Postgres through DATABASE_URL, else the embedded PGlite (Postgres in
 * WASM) in DATA_DIR. Both run the same migrations and the same queries.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import knexFactory, { type Knex } from 'knex';
import ClientPgLite from 'knex-pglite';
import { Model } from 'objection';
import { migrationSource } from './migrations/index.ts';

export type Db = Knex;

export interface DbOptions {
  databaseUrl?: string;
  /** Directory for PGlite; `null` keeps PGlite in memory (tests). */
  dataDir?: string | null;
}

/** Opens the database, runs pending migrations and binds the objection models to it. */
export async function openDatabase(opts: DbOptions): Promise<Db> {
  const db = opts.databaseUrl
    ? knexFactory({ client: 'pg', connection: opts.databaseUrl, pool: { min: 0, max: 10 } })
    : knexFactory({ client: ClientPgLite, dialect: 'postgres', connection: pgliteConnection(opts.dataDir) });
  await db.migrate.latest({ migrationSource });
  Model.knex(db);
  return db;
}

function pgliteConnection(dataDir: string | null | undefined): { filename: string } {
  // knex-pglite keeps the database in memory when no filename is given.
  if (dataDir === null || dataDir === undefined) return {} as { filename: string };
  const dir = join(dataDir, 'pglite');
  mkdirSync(dir, { recursive: true });
  return { filename: dir };
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

/** A json/jsonb column's value: Postgres hands back the parsed value, PGlite and SQLite-style drivers may hand back text. */
export const jsonColumn = <T>(value: unknown): T => (typeof value === 'string' ? JSON.parse(value) : value) as T;
