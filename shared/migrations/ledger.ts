/**
 * The ledger's statements (docs/migrations.md, "The ledger"). Every write covers a page or a
 * chunk in one statement: a listed page is one insert, a chunk's claim one update, its outcomes
 * one update that also moves the migration's counts; nothing costs a round trip per object.
 * Leases use the database's clock, the one clock every worker shares.
 */
import type { Knex } from 'knex';
import type { LedgerRow, MigrationRow, MigrationState, ObjectOutcome } from './index.ts';

type Raw = Record<string, unknown>;
const num = (v: unknown): number => (v === null || v === undefined ? 0 : Number(v));
const date = (v: unknown): Date | null => (v ? new Date(v as string) : null);
const json = <T>(v: unknown, empty: T): T =>
  v === null || v === undefined ? empty : typeof v === 'string' ? (JSON.parse(v) as T) : (v as T);

/** A `migrations` row from the database's names. */
export function migrationOf(r: Raw): MigrationRow {
  return {
    id: r.id as string,
    tenantId: r.tenant_id as string,
    source: json(r.source, { prefix: '' }),
    metadata: json(r.metadata, {}),
    outputPrefix: r.output_prefix as string,
    decryptPrincipal: (r.decrypt_principal as string | null) ?? null,
    state: r.state as MigrationState,
    rateLimit: num(r.rate_limit),
    listingCursor: (r.listing_cursor as string | null) ?? null,
    listingDone: Boolean(r.listing_done),
    listingStep: num(r.listing_step),
    chunksListed: num(r.chunks_listed),
    objectsListed: num(r.objects_listed),
    objectsConverted: num(r.objects_converted),
    objectsRefused: num(r.objects_refused),
    bytesRead: num(r.bytes_read),
    createdBy: r.created_by as string,
    createdAt: date(r.created_at)!,
    updatedAt: date(r.updated_at)!,
    completedAt: date(r.completed_at),
  };
}

/** A ledger row from the database's names. */
export function ledgerRowOf(r: Raw): LedgerRow {
  return {
    migrationId: r.migration_id as string,
    sourceKey: r.source_key as string,
    chunk: r.chunk as string,
    inputSize: r.input_size === null ? null : num(r.input_size),
    inputVersion: (r.input_version as string | null) ?? null,
    inputSha256: (r.input_sha256 as string | null) ?? null,
    form: (r.form as string | null) ?? null,
    outcome: (r.outcome as LedgerRow['outcome']) ?? null,
    problem: (r.problem as string | null) ?? null,
    detail: (r.detail as string | null) ?? null,
    outputs: json(r.outputs, []),
    keys: json(r.keys, []),
    signers: json(r.signers, []),
    attempts: num(r.attempts),
    worker: (r.worker as string | null) ?? null,
    leaseOwner: (r.lease_owner as string | null) ?? null,
    leaseExpiresAt: date(r.lease_expires_at),
    listedAt: date(r.listed_at)!,
    startedAt: date(r.started_at),
    finishedAt: date(r.finished_at),
  };
}

/** The migration, or null. */
export async function loadMigration(db: Knex, id: string): Promise<MigrationRow | null> {
  const row = await db('migrations').where({ id }).first();
  return row ? migrationOf(row) : null;
}

/** One listed object, with the chunk it was put in. */
export interface ListedObject {
  key: string;
  size: number;
  version: string;
  chunk: string;
}

/**
 * Records a listed page: its rows (one insert; an object already in the ledger stays as it is),
 * the cursor after it and the next step, in one transaction. Fenced by the step: answers null,
 * writing nothing, when another lister already recorded this step.
 */
export async function insertListed(
  db: Knex,
  migrationId: string,
  step: number,
  page: { objects: ListedObject[]; cursor: string | null; done: boolean; chunks: number },
): Promise<{ inserted: number } | null> {
  return db.transaction(async (trx) => {
    const moved = await trx('migrations')
      .where({ id: migrationId, listing_step: step, state: 'running' })
      .update({
        listing_step: step + 1,
        listing_cursor: page.cursor,
        listing_done: page.done,
        chunks_listed: trx.raw('chunks_listed + ?', [page.chunks]),
        updated_at: trx.fn.now(),
      })
      .returning('id');
    if (moved.length === 0) return null;
    let inserted = 0;
    if (page.objects.length > 0) {
      const rows = await trx('migration_objects')
        .insert(
          page.objects.map((o) => ({
            migration_id: migrationId,
            source_key: o.key,
            chunk: o.chunk,
            input_size: o.size,
            input_version: o.version,
          })),
        )
        .onConflict(['migration_id', 'source_key'])
        .ignore()
        .returning('source_key');
      inserted = rows.length;
      await trx('migrations')
        .where({ id: migrationId })
        .update({ objects_listed: trx.raw('objects_listed + ?', [inserted]) });
    }
    return { inserted };
  });
}

/**
 * Leases the chunk's objects that are not final (pending, or converted and to be checked) to
 * `owner` for `leaseMs`, in one statement; an object leased by another live worker is left to it.
 * Nothing is claimed unless the migration is running.
 */
export async function claimChunk(
  db: Knex,
  migrationId: string,
  chunk: string,
  owner: string,
  leaseMs: number,
): Promise<LedgerRow[]> {
  const { rows } = await db.raw(
    `update migration_objects o
        set lease_owner = ?, lease_expires_at = now() + ? * interval '1 millisecond'
      where o.migration_id = ? and o.chunk = ?
        and (o.outcome is null or o.outcome = 'converted')
        and (o.lease_owner is null or o.lease_expires_at < now() or o.lease_owner = ?)
        and exists (select 1 from migrations m where m.id = ? and m.state = 'running')
      returning o.*`,
    [owner, leaseMs, migrationId, chunk, owner, migrationId],
  );
  return (rows as Raw[]).map(ledgerRowOf).sort((a, b) => (a.sourceKey < b.sourceKey ? -1 : 1));
}

/** Extends `owner`'s leases on the chunk (a heartbeat while it works). */
export async function renewLeases(
  db: Knex,
  migrationId: string,
  chunk: string,
  owner: string,
  leaseMs: number,
): Promise<number> {
  return db('migration_objects')
    .where({ migration_id: migrationId, chunk, lease_owner: owner })
    .update({ lease_expires_at: db.raw("now() + ? * interval '1 millisecond'", [leaseMs]) });
}

/** Gives back `owner`'s leases on these objects (checked and kept, or left for a retry). */
export async function releaseLeases(
  db: Knex,
  migrationId: string,
  keys: string[],
  owner: string,
): Promise<void> {
  if (keys.length === 0) return;
  await db('migration_objects')
    .where({ migration_id: migrationId, lease_owner: owner })
    .whereIn('source_key', keys)
    .update({ lease_owner: null, lease_expires_at: null });
}

/**
 * When the chunk's other unfinished objects are leased by someone else, the latest expiry of
 * those leases (the chunk is looked at again then); null when none is.
 */
export async function othersLeaseEnd(
  db: Knex,
  migrationId: string,
  chunk: string,
  owner: string,
): Promise<Date | null> {
  const row = await db('migration_objects')
    .where({ migration_id: migrationId, chunk })
    .whereNull('outcome')
    .whereNot('lease_owner', owner)
    .where('lease_expires_at', '>=', db.fn.now())
    .max({ until: 'lease_expires_at' })
    .first();
  return date(row?.until);
}

const VALUES_ROW =
  '(?::text, ?::text, ?::bigint, ?::text, ?::text, ?::text, ?::text, ?::jsonb, ?::jsonb, ?::jsonb, ?::timestamptz)';

/**
 * Writes a chunk's outcomes and moves the migration's counts, in one statement. Only rows
 * `owner` still leases are written (a worker whose lease ran out writes nothing: the object went
 * to another); the counts move by the outcomes that changed. Answers the rows written.
 */
export async function recordOutcomes(
  db: Knex,
  migrationId: string,
  owner: string,
  worker: string,
  outcomes: ObjectOutcome[],
): Promise<number> {
  if (outcomes.length === 0) return 0;
  const bindings: Knex.RawBinding[] = [];
  for (const o of outcomes) {
    const converted = o.outcome === 'converted';
    bindings.push(
      o.sourceKey,
      o.outcome,
      o.inputSize,
      o.inputSha256,
      o.form,
      converted ? null : o.problem,
      converted ? null : o.detail,
      JSON.stringify(converted ? o.outputs : []),
      JSON.stringify(converted ? o.keys : []),
      JSON.stringify(converted ? o.signers : []),
      o.startedAt.toISOString(),
    );
  }
  const { rows } = await db.raw(
    `with input (source_key, outcome, input_size, input_sha256, form, problem, detail, outputs, keys, signers, started_at) as (
       values ${outcomes.map(() => VALUES_ROW).join(', ')}
     ),
     old as (
       select o.source_key, o.outcome from migration_objects o join input i on i.source_key = o.source_key
        where o.migration_id = ? and o.lease_owner = ?
     ),
     upd as (
       update migration_objects o
          set outcome = i.outcome, input_size = coalesce(i.input_size, o.input_size),
              input_sha256 = i.input_sha256, form = i.form, problem = i.problem, detail = i.detail,
              outputs = i.outputs, keys = i.keys, signers = i.signers, attempts = o.attempts + 1,
              worker = ?, lease_owner = null, lease_expires_at = null,
              started_at = i.started_at, finished_at = now()
         from input i
        where o.migration_id = ? and o.source_key = i.source_key and o.lease_owner = ?
       returning o.source_key, i.outcome, i.input_size
     ),
     delta as (
       select count(*) filter (where u.outcome = 'converted' and o.outcome is distinct from 'converted')
            - count(*) filter (where u.outcome <> 'converted' and o.outcome = 'converted') as converted,
              count(*) filter (where u.outcome = 'refused' and o.outcome is distinct from 'refused')
            - count(*) filter (where u.outcome <> 'refused' and o.outcome = 'refused') as refused,
              coalesce(sum(u.input_size) filter (where u.outcome = 'converted' and o.outcome is distinct from 'converted'), 0) as bytes,
              count(*) as written
         from upd u join old o on o.source_key = u.source_key
     )
     update migrations m
        set objects_converted = m.objects_converted + d.converted,
            objects_refused = m.objects_refused + d.refused,
            bytes_read = m.bytes_read + d.bytes, updated_at = now()
       from delta d where m.id = ?
     returning d.written`,
    [...bindings, migrationId, owner, worker, migrationId, owner, migrationId],
  );
  return num((rows as Raw[])[0]?.written);
}

/**
 * Completes a running migration whose listing is done and whose every object is final; true when
 * this call completed it (the caller then runs the completion hook, once).
 */
export async function completeIfDone(db: Knex, migrationId: string): Promise<boolean> {
  const { rows } = await db.raw(
    `update migrations m set state = 'completed', completed_at = now(), updated_at = now()
      where m.id = ? and m.state = 'running' and m.listing_done
        and m.objects_listed = m.objects_converted + m.objects_refused
        and not exists (select 1 from migration_objects o where o.migration_id = m.id and o.outcome is null)
      returning m.id`,
    [migrationId],
  );
  return (rows as Raw[]).length > 0;
}

/** Names of chunks with an unfinished object nobody holds a live lease on (at most `limit`). */
export async function pendingChunks(
  db: Knex,
  migrationId: string,
  limit: number,
): Promise<string[]> {
  const rows = await db('migration_objects')
    .distinct('chunk')
    .where({ migration_id: migrationId })
    .whereNull('outcome')
    .where((q) => q.whereNull('lease_expires_at').orWhere('lease_expires_at', '<', db.fn.now()))
    .limit(limit);
  return rows.map((r: Raw) => r.chunk as string);
}

/**
 * Every ledger row of the migration in source-key order (byte order), as plain objects, read
 * page by page (keyset pagination on the primary key): the report streams it, the manifest is
 * built from it. Memory stays one page whatever the migration's size. `after` starts past a
 * source key; `outcome` keeps only the rows with that outcome.
 */
export async function* ledgerRowsInOrder(
  db: Knex,
  migrationId: string,
  opts: { pageSize?: number; after?: string | null; outcome?: 'converted' } = {},
): AsyncGenerator<LedgerRow> {
  const pageSize = opts.pageSize ?? 1000;
  let after = opts.after ?? null;
  for (;;) {
    const q = db('migration_objects').where({ migration_id: migrationId });
    if (opts.outcome) q.where({ outcome: opts.outcome });
    if (after !== null) q.where('source_key', '>', after);
    const rows: Raw[] = await q.orderBy('source_key').limit(pageSize);
    for (const r of rows) yield ledgerRowOf(r);
    if (rows.length < pageSize) return;
    after = rows[rows.length - 1].source_key as string;
  }
}
