/**
 * Restore of a backup into an empty database, with the service stopped. Two passes
 * over the file: the first decrypts and checks all of it (every chunk's tag, the final chunk,
 * the header's schema, every table's row count) and writes nothing; only then is the target
 * opened, checked empty (before its migrations run), migrated to the backup's own schema, loaded
 * in one transaction, and migrated on to this version's schema.
 */
import type { Knex } from 'knex';
import { migrateRest, openDatabase } from '../db/knex.ts';
import { createKeyring } from '../crypto/master-key.ts';
import type { KeyringEntry } from '../crypto/keyring.ts';
import { checkKeyring } from '../keys/sealed-items.ts';
import { BackupFileError, decryptBackup } from './sealed-file.ts';
import { BACKUP_FORMAT, type SnapshotHeader } from './snapshot.ts';
import { MIGRATION_NAMES } from '../db/migrations/index.ts';

/** A restore refused for its target or its schema (nothing was written). */
export class RestoreRefused extends Error {
  override name = 'RestoreRefused';
}

export interface RestoreOptions {
  /** Opens the backup file from its start (called once per pass). */
  open: () => AsyncIterable<Buffer>;
  passphrase: string;
  /** Where to: a PostgreSQL URL, or a DATA_DIR for the embedded database. */
  target: { databaseUrl: string } | { dataDir: string };
  /** When given, the restore also checks that this keyring opens the restored material. */
  keyring?: readonly KeyringEntry[];
}

export interface RestoreReport {
  tables: Array<{ name: string; rows: number }>;
  rows: number;
  bytes: number;
  migrations: string[];
  createdAt: string;
}

type Line =
  | ({ kind: 'header' } & SnapshotHeader)
  | { kind: 'table'; name: string }
  | { kind: 'end'; name: string; rows: number }
  | { kind: 'done'; tables: number }
  | { r: Record<string, unknown> };

/** The plaintext's lines, parsed, with the bytes of plaintext seen so far. */
async function* linesOf(
  chunks: AsyncIterable<Buffer>,
  counter: { bytes: number },
): AsyncGenerator<Line> {
  let carry = '';
  for await (const chunk of chunks) {
    counter.bytes += chunk.length;
    const text = carry + chunk.toString('utf8');
    const parts = text.split('\n');
    carry = parts.pop()!;
    for (const p of parts) if (p !== '') yield JSON.parse(p) as Line;
  }
  if (carry !== '') throw new BackupFileError('the backup ends in the middle of a line');
}

/** Pass 1: checks the whole file and its structure; answers its header and counts. */
async function verify(opts: RestoreOptions): Promise<RestoreReport> {
  const counter = { bytes: 0 };
  let header: SnapshotHeader | null = null;
  let current: { name: string; rows: number } | null = null;
  const tables: Array<{ name: string; rows: number }> = [];
  let done = false;
  for await (const line of linesOf(decryptBackup(opts.open(), opts.passphrase), counter)) {
    if (done) throw new BackupFileError('the backup has lines after its end');
    if (!header) {
      if (!('kind' in line) || line.kind !== 'header' || line.format !== BACKUP_FORMAT)
        throw new BackupFileError(`the backup does not start with a ${BACKUP_FORMAT} header`);
      header = line;
      const unknown = header.migrations.filter((m) => !MIGRATION_NAMES.includes(m));
      if (unknown.length > 0)
        throw new RestoreRefused(
          `the backup is of a newer schema than this Keyward (migrations ${unknown.join(', ')}): restore it with the version that made it, or a newer one`,
        );
      continue;
    }
    if ('r' in line) {
      if (!current) throw new BackupFileError('the backup has a row outside any table');
      current.rows++;
    } else if (line.kind === 'table') {
      current = { name: line.name, rows: 0 };
    } else if (line.kind === 'end') {
      if (!current || current.name !== line.name || current.rows !== line.rows)
        throw new BackupFileError(`the backup's table ${line.name} does not hold its row count`);
      tables.push(current);
      current = null;
    } else if (line.kind === 'done') {
      if (line.tables !== header.tables.length || tables.length !== header.tables.length)
        throw new BackupFileError('the backup does not hold every table its header names');
      done = true;
    } else throw new BackupFileError('the backup has a line of an unknown kind');
  }
  if (!header || !done) throw new BackupFileError('the backup ends before its last table');
  return {
    tables,
    rows: tables.reduce((n, t) => n + t.rows, 0),
    bytes: counter.bytes,
    migrations: header.migrations,
    createdAt: header.createdAt,
  };
}

/** Refuses a target with any row in any table (run before its migrations). */
async function assertEmpty(db: Knex): Promise<void> {
  const { rows } = (await db.raw(
    "select table_name as name from information_schema.tables where table_schema = 'public' and table_type = 'BASE TABLE' and table_name not like 'knex_migrations%'",
  )) as { rows: Array<{ name: string }> };
  const full: string[] = [];
  for (const { name } of rows) {
    const r = (await db.raw('select exists(select 1 from ??) as e', [name])) as {
      rows: Array<{ e: boolean }>;
    };
    if (r.rows[0].e) full.push(name);
  }
  if (full.length > 0)
    throw new RestoreRefused(
      `the target database is not empty (rows in ${full.slice(0, 5).join(', ')}${full.length > 5 ? ', ...' : ''}): restore into a new, empty database`,
    );
}

/** Pass 2: loads the rows in one transaction; sets the sequences past the restored ids. */
async function load(db: Knex, opts: RestoreOptions): Promise<void> {
  await db.transaction(async (trx) => {
    let table = '';
    let batch: Array<Record<string, unknown>> = [];
    const flush = async () => {
      if (batch.length === 0) return;
      const cols = Object.keys(batch[0]);
      await trx.raw(
        `insert into ?? (${cols.map(() => '??').join(', ')}) select ${cols.map(() => '??').join(', ')} from jsonb_populate_recordset(null::??, ?::jsonb)`,
        [table, ...cols, ...cols, table, JSON.stringify(batch)],
      );
      batch = [];
    };
    for await (const line of linesOf(decryptBackup(opts.open(), opts.passphrase), {
      bytes: 0,
    })) {
      if ('r' in line) {
        batch.push(line.r);
        if (batch.length >= 200) await flush();
      } else if (line.kind === 'table') table = line.name;
      else if (line.kind === 'end') await flush();
    }
    const { rows: serials } = (await trx.raw(
      "select table_name as t, column_name as c, pg_get_serial_sequence(quote_ident(table_name), column_name) as s from information_schema.columns where table_schema = 'public' and column_default like 'nextval%'",
    )) as { rows: Array<{ t: string; c: string; s: string | null }> };
    for (const { t, c, s } of serials)
      if (s)
        await trx.raw('select setval(?, coalesce((select max(??) from ??), 0) + 1, false)', [
          s,
          c,
          t,
        ]);
    if (opts.keyring) await checkKeyring(trx, createKeyring(opts.keyring));
  });
}

/** Verifies the whole backup, then restores it into the empty target; answers what it restored. */
export async function restoreBackup(opts: RestoreOptions): Promise<RestoreReport> {
  const report = await verify(opts);
  const db = await openDatabase({
    ...('databaseUrl' in opts.target
      ? { databaseUrl: opts.target.databaseUrl }
      : { dataDir: opts.target.dataDir }),
    beforeMigrate: assertEmpty,
    // The rows go into the schema they were taken from; the newer migrations then move them as
    // they moved every live database's (a table merged into another, a column split).
    migrations: report.migrations,
  });
  try {
    await load(db, opts);
    await migrateRest(db);
  } finally {
    await db.destroy();
  }
  return report;
}
