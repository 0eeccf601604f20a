/**
 * A consistent snapshot of every table, as NDJSON lines: a header naming the schema
 * (the migrations applied), then per table a `table` line, its rows as `{"r": to_jsonb(row)}`
 * and an `end` line with the count, and a last `done` line (a cut plaintext is noticed too).
 * `to_jsonb` keeps every value exact whatever its type (timestamps to the microsecond, bytea as
 * `\x` hex, jsonb as itself), and `jsonb_populate_recordset` turns it back on either engine.
 * All reads run in one REPEATABLE READ, READ ONLY transaction, in pages of rows keyed by ctid, so
 * memory stays constant whatever the size. Tables come parents first (foreign keys), which is
 * the order a restore inserts them in. The master key is not in the database, so never here.
 */
import type { Knex } from 'knex';

/** The backup's plaintext format. */
export const BACKUP_FORMAT = 'keyward-backup/1';
/** Tables the migrations own: recreated, never copied. */
const SKIPPED = new Set(['knex_migrations', 'knex_migrations_lock']);
const PAGE = 500;

export interface SnapshotHeader {
  format: typeof BACKUP_FORMAT;
  createdAt: string;
  /** The migrations applied, in order: the schema the rows belong to. */
  migrations: string[];
  tables: string[];
}

/** The public tables (but the migrations' own), parents before children. */
export async function tablesInOrder(db: Knex): Promise<string[]> {
  const tables = (
    (await db.raw(
      "select table_name as name from information_schema.tables where table_schema = 'public' and table_type = 'BASE TABLE' order by table_name",
    )) as { rows: Array<{ name: string }> }
  ).rows
    .map((r) => r.name)
    .filter((t) => !SKIPPED.has(t));
  const edges = (
    (await db.raw(
      "select c.conrelid::regclass::text as child, c.confrelid::regclass::text as parent from pg_constraint c join pg_namespace n on n.oid = c.connamespace where c.contype = 'f' and n.nspname = 'public'",
    )) as { rows: Array<{ child: string; parent: string }> }
  ).rows;
  const ordered: string[] = [];
  const seen = new Set<string>();
  const visit = (t: string, path: Set<string>) => {
    if (seen.has(t) || path.has(t)) return;
    path.add(t);
    for (const e of edges) if (e.child === t && e.parent !== t) visit(e.parent, path);
    seen.add(t);
    ordered.push(t);
  };
  for (const t of tables) visit(t, new Set());
  return ordered;
}

/** The migrations applied to `db`, in order. */
export async function appliedMigrations(db: Knex): Promise<string[]> {
  if (!(await db.schema.hasTable('knex_migrations'))) return [];
  return (
    (await db('knex_migrations').select('name').orderBy('id')) as Array<{ name: string }>
  ).map((r) => r.name);
}

/**
 * Yields the snapshot as NDJSON lines; `onRows` hears each table's count at its end. The
 * transaction is committed (read only) when the generator ends or is abandoned.
 */
export async function* snapshotLines(
  db: Knex,
  onRows?: (table: string, rows: number) => void,
): AsyncGenerator<string> {
  const trx = await db.transaction({ isolationLevel: 'repeatable read', readOnly: true });
  try {
    const tables = await tablesInOrder(trx);
    const header: SnapshotHeader = {
      format: BACKUP_FORMAT,
      createdAt: new Date().toISOString(),
      migrations: await appliedMigrations(trx),
      tables,
    };
    yield `${JSON.stringify({ kind: 'header', ...header })}\n`;
    for (const table of tables) {
      yield `${JSON.stringify({ kind: 'table', name: table })}\n`;
      let count = 0;
      // A cursor of the snapshot's transaction reads each table once, in pages. Paging by
      // `ctid > last order by ctid limit n` instead crawled on the embedded database
      // (bench/master-key.bench.ts; bench/results/design-figures.md): each page had the rows
      // after it sorted again.
      await trx.raw(
        'declare kw_backup no scroll cursor for select to_jsonb(t)::text as j from ?? as t',
        [table],
      );
      for (;;) {
        const { rows } = (await trx.raw(`fetch forward ${PAGE} from kw_backup`)) as {
          rows: Array<{ j: string }>;
        };
        if (rows.length === 0) break;
        let out = '';
        for (const r of rows) out += `{"r":${r.j}}\n`;
        yield out;
        count += rows.length;
      }
      await trx.raw('close kw_backup');
      onRows?.(table, count);
      yield `${JSON.stringify({ kind: 'end', name: table, rows: count })}\n`;
    }
    yield `${JSON.stringify({ kind: 'done', tables: tables.length })}\n`;
  } finally {
    await trx.commit().catch(() => undefined);
  }
}
