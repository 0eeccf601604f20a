/**
 * Test databases: each test file gets its own. PGlite in memory by default; with
 * TEST_DATABASE_URL set, a fresh Postgres database created for the file and dropped after.
 */
import { randomBytes } from 'node:crypto';
import knexFactory from 'knex';
import { withDeadline } from './deadline.ts';
import { closeWhenFileEnds, once } from './file-teardown.ts';

export interface TestDatabase {
  /** DATABASE_URL for the context, or undefined for in-memory PGlite. */
  url?: string;
  drop(): Promise<void>;
}

/** Which engine the suite runs on, for test names and logs. */
export const TEST_ENGINE = process.env.TEST_DATABASE_URL ? 'postgres' : 'pglite';

/**
 * Creates an empty database for one test file, dropped at the file's end at the latest; with
 * `dropAtFileEnd: false`, only by its owner (an API instance that drops it when it stops, and
 * must not lose it before).
 */
export async function createTestDatabase({ dropAtFileEnd = true } = {}): Promise<TestDatabase> {
  const base = process.env.TEST_DATABASE_URL;
  if (!base) return { url: undefined, drop: async () => {} };
  if (!dropAtFileEnd)
    return withDeadline(`a Postgres database on ${new URL(base).host}`, createDatabase(base));
  return createPostgresDatabase(base);
}

/** Postgres for tests that need several API instances on one database, whatever the engine of the run. */
export const SHARED_POSTGRES_URL =
  process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** Redis for tests that need it (the machine's shared, non-persistent Redis). */
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** Creates a fresh database on the Postgres server at `base`, dropped at the file's end at the latest. */
export function createPostgresDatabase(base: string): Promise<TestDatabase> {
  const created = closeWhenFileEnds('a Postgres database', createDatabase(base), (db) => db.drop());
  return withDeadline(`a Postgres database on ${new URL(base).host}`, created);
}

async function createDatabase(base: string): Promise<TestDatabase> {
  const name = `kw_test_${randomBytes(6).toString('hex')}`;
  const admin = knexFactory({ client: 'pg', connection: base, pool: { min: 0, max: 1 } });
  try {
    await admin.raw(`create database ${name}`);
  } catch (err) {
    await admin.destroy();
    throw new Error(
      `TEST_DATABASE_URL=${base} is set but Postgres refused to create a database: ${(err as Error).message}`,
    );
  }
  await admin.destroy();
  const url = new URL(base);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: once(async () => {
      const again = knexFactory({ client: 'pg', connection: base, pool: { min: 0, max: 1 } });
      try {
        await again.raw(`drop database if exists ${name} with (force)`);
      } finally {
        await again.destroy();
      }
    }),
  };
}
