/**
 * The use cases behind /api/v3/migration/migrations, for one tenant: create a durable migration,
 * read its state and progress, pause, resume, cancel, retry its refused objects, and report
 * every object from the ledger (docs/migrations.md). The migration's row is its one owner of
 * state; the queue is told afterwards, and when it cannot be (Redis away) the workers' sweep
 * puts in flight what the row says should be.
 */
import { randomUUID } from 'node:crypto';
import type { AppContext } from '../../context.ts';
import { problem } from '../../../shared/errors/index.ts';
import {
  assertObjectKey,
  assertPrefix,
  assertTenantWritable,
} from '../../../shared/storage/index.ts';
import { type MigrationRow, type MigrationState } from '../../../shared/migrations/index.ts';
import { loadMigration } from '../../../shared/migrations/ledger.ts';
import { ensureInFlight } from '../../../shared/migrations/schedule.ts';
import { storedManifestPath } from '../../../shared/migrations/manifest.ts';
import type { AccessClaims } from '../auth/access-tokens.ts';
import { decryptingCaller } from '../crypto/decrypting-caller.ts';
import { scheduleOptions } from './producer.ts';
import type { MigrationView } from '../../schemas/migrations.ts';

const MAX_METADATA_BYTES = 4096;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The view of a row. */
export function migrationView(m: MigrationRow, now = Date.now()): MigrationView {
  const done = m.objectsConverted + m.objectsRefused;
  const end = m.completedAt ? m.completedAt.getTime() : now;
  const seconds = Math.max(0.001, (end - m.createdAt.getTime()) / 1000);
  const rate = done / seconds;
  const pending = Math.max(0, m.objectsListed - done);
  return {
    id: m.id,
    state: m.state,
    source: m.source,
    output: { prefix: m.outputPrefix },
    metadata: m.metadata,
    rateLimit: m.rateLimit,
    listing: { done: m.listingDone },
    counts: {
      listed: m.objectsListed,
      converted: m.objectsConverted,
      refused: m.objectsRefused,
      pending,
      bytesRead: m.bytesRead,
    },
    objectsPerSecond: Number(rate.toFixed(2)),
    etaSeconds:
      m.state === 'completed' ? 0 : m.listingDone && rate > 0 ? Math.ceil(pending / rate) : null,
    createdAt: m.createdAt.toISOString(),
    updatedAt: m.updatedAt.toISOString(),
    completedAt: m.completedAt ? m.completedAt.toISOString() : null,
  };
}

export interface CreateMigration {
  source: { prefix?: string; manifest?: string };
  metadata?: object;
  output: { prefix: string };
  rateLimit?: number;
}

const invalid = (message: string, field: string) =>
  problem('validation_failed', message, { details: { field } });

/** Checks what the schema cannot say: one source, safe keys, metadata without a password. */
function checked(body: CreateMigration) {
  const metadata = (body.metadata ?? {}) as Record<string, unknown>;
  // A migration stores its metadata and shows it: a password must never be.
  if ('password' in metadata)
    throw invalid(
      'metadata.password is not accepted: a migration stores its metadata; convert password-encrypted files with the streaming endpoint',
      'metadata.password',
    );
  if (Buffer.byteLength(JSON.stringify(metadata)) > MAX_METADATA_BYTES)
    throw invalid(`metadata must be at most ${MAX_METADATA_BYTES} bytes of JSON`, 'metadata');
  const { prefix, manifest } = body.source;
  if ((prefix === undefined) === (manifest === undefined))
    throw invalid('source takes either prefix or manifest', 'source');
  const source =
    prefix !== undefined
      ? { prefix: assertPrefix(prefix) }
      : { manifest: assertObjectKey(manifest) };
  const outputPrefix = assertTenantWritable(assertPrefix(body.output.prefix), 'prefix');
  return { source, metadata, outputPrefix };
}

/** Tells the queue; a queue away is logged, the sweep does it later. */
async function schedule(ctx: AppContext, id: string): Promise<void> {
  try {
    await ensureInFlight(ctx.db, await ctx.migrateQueue.get(), id, scheduleOptions(ctx));
  } catch (err) {
    ctx.logger.warn(
      { migrationId: id, err: (err as Error).message },
      'could not queue the migration now; the workers sweep will',
    );
  }
}

/** Creates a migration and queues its first listing step. */
export async function createMigration(
  ctx: AppContext,
  claims: AccessClaims,
  body: CreateMigration,
): Promise<MigrationView> {
  const { source, metadata, outputPrefix } = checked(body);
  // Without Redis no worker will ever see it: refuse before writing anything.
  await ctx.migrateQueue.get();
  // The conversions decrypt as the creator may, against the creator's budget.
  const caller = decryptingCaller(claims);
  const id = randomUUID();
  await ctx.db('migrations').insert({
    id,
    tenant_id: claims.tenantId,
    source: JSON.stringify(source),
    metadata: JSON.stringify(metadata),
    output_prefix: outputPrefix,
    decrypt_principal: caller.mayDecrypt ? caller.principal : null,
    rate_limit: body.rateLimit ?? 0,
    created_by: caller.principal,
  });
  await schedule(ctx, id);
  return readMigration(ctx, claims.tenantId, id);
}

/** The tenant's migration, or 404 exactly as for a missing one. */
async function owned(ctx: AppContext, tenantId: string, id: string): Promise<MigrationRow> {
  const m = UUID.test(id) ? await loadMigration(ctx.db, id) : null;
  if (!m || m.tenantId !== tenantId)
    throw problem('not_found', `no migration ${id.slice(0, 64)} in this tenant`);
  return m;
}

/** The migration's state, counts, rate and ETA. */
export async function readMigration(
  ctx: AppContext,
  tenantId: string,
  id: string,
): Promise<MigrationView> {
  return migrationView(await owned(ctx, tenantId, id));
}

/** The operations on a migration's state: from which states each may be asked. */
const MOVES = {
  pause: { from: ['running'], to: 'paused' },
  resume: { from: ['paused', 'running'], to: 'running' },
  cancel: { from: ['running', 'paused'], to: 'cancelled' },
} as const satisfies Record<string, { from: readonly MigrationState[]; to: MigrationState }>;

/** Pauses, resumes or cancels; resuming (also of a running migration) queues what is missing. */
export async function moveMigration(
  ctx: AppContext,
  tenantId: string,
  id: string,
  op: keyof typeof MOVES,
): Promise<MigrationView> {
  const m = await owned(ctx, tenantId, id);
  const move = MOVES[op];
  const moved = await ctx
    .db('migrations')
    .where({ id: m.id })
    .whereIn('state', move.from as readonly string[])
    .update({ state: move.to, updated_at: ctx.db.fn.now() })
    .returning('id');
  if (moved.length === 0)
    throw problem('invalid_transition', `a ${m.state} migration cannot be asked to ${op}`, {
      details: { state: m.state, operation: op },
    });
  if (move.to === 'running') await schedule(ctx, m.id);
  return readMigration(ctx, tenantId, m.id);
}

/**
 * Makes the refused objects pending again (after importing a missing key, say) and runs the
 * migration again over them: only those; converted objects stay as they are. A completed
 * migration's stored manifest goes first: it no longer states the ledger, and a second
 * completion that stores none (no archive signing key then, a worker killed) must leave the
 * manifest to be made on demand, not answer the first one.
 */
export async function retryRefused(
  ctx: AppContext,
  tenantId: string,
  id: string,
): Promise<MigrationView & { retried: number }> {
  const m = await owned(ctx, tenantId, id);
  if (m.state === 'cancelled')
    throw problem('invalid_transition', 'a cancelled migration cannot be retried', {
      details: { state: m.state, operation: 'retry' },
    });
  if (m.state === 'completed')
    await (await ctx.objectStore.get()).delete(storedManifestPath(m.tenantId, m.id));
  const retried = await ctx.db.transaction(async (trx) => {
    const rows = await trx('migration_objects')
      .where({ migration_id: m.id, outcome: 'refused' })
      .update({
        outcome: null,
        problem: null,
        detail: null,
        lease_owner: null,
        lease_expires_at: null,
      })
      .returning('source_key');
    await trx('migrations')
      .where({ id: m.id })
      .update({
        objects_refused: trx.raw('objects_refused - ?', [rows.length]),
        state: trx.raw("case when state = 'completed' then 'running' else state end"),
        completed_at: trx.raw("case when state = 'completed' then null else completed_at end"),
        updated_at: trx.fn.now(),
      });
    return rows.length;
  });
  await schedule(ctx, m.id);
  return { ...(await readMigration(ctx, tenantId, m.id)), retried };
}

/** Checks the migration is the tenant's before its report streams. */
export async function reportedMigration(
  ctx: AppContext,
  tenantId: string,
  id: string,
): Promise<MigrationRow> {
  return owned(ctx, tenantId, id);
}
