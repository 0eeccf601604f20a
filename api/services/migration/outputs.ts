/**
 * A migration's outputs, read back and removed through the ledger: a client that migrated a
 * folder downloads each object's result (and a SignedData's content) by its source key, and
 * removes everything the migration wrote in one call once it has them. Only what the ledger
 * records as this migration's output is ever opened or deleted, so neither call reaches any
 * other object of the tenant's storage, whatever the migration's output prefix.
 */
import type { Readable } from 'node:stream';
import type { AppContext } from '../../context.ts';
import { AppError, problem } from '../../../shared/errors/index.ts';
import { tenantStore } from '../../../shared/storage/index.ts';
import { ledgerRowOf, ledgerRowsInOrder } from '../../../shared/migrations/ledger.ts';
import { eachLimited } from '../../../shared/each-limited.ts';
import { reportedMigration } from './migrations.ts';

/** One object a converted source produced: its bytes, with what the answer's headers say. */
export async function openMigrationOutput(
  ctx: AppContext,
  tenantId: string,
  id: string,
  sourceKey: string,
  role: 'result' | 'content',
): Promise<{ body: Readable; contentType: string; size: number; filename: string }> {
  const m = await reportedMigration(ctx, tenantId, id);
  const raw = await ctx
    .db('migration_objects')
    .where({ migration_id: m.id, source_key: sourceKey })
    .first();
  const row = raw ? ledgerRowOf(raw) : null;
  const written = row?.outcome === 'converted' ? row.outputs.find((o) => o.role === role) : null;
  if (!written)
    throw problem(
      'not_found',
      `the migration has no ${role} object of that source (not converted, or no such object)`,
    );
  return openWritten(ctx, tenantId, written, 'the output object no longer exists in storage');
}

/**
 * An object a conversion wrote, opened from the tenant's storage with what a download's headers
 * say; `gone` is the not-found problem's detail when it was deleted since.
 */
export async function openWritten(
  ctx: AppContext,
  tenantId: string,
  written: { key: string; contentType: string; size: number },
  gone: string,
): Promise<{ body: Readable; contentType: string; size: number; filename: string }> {
  const objects = tenantStore(await ctx.objectStore.get(), tenantId);
  try {
    return {
      body: await objects.get(written.key),
      contentType: written.contentType,
      size: written.size,
      filename: written.key
        .split('/')
        .pop()!
        .replace(/[^\w.-]/g, '_'),
    };
  } catch (err) {
    if (err instanceof AppError && err.code === 'not_found') throw problem('not_found', gone);
    throw err;
  }
}

/** Deletes run at once while a migration's outputs are removed. */
const DELETE_LANES = 16;

/**
 * Removes every object the ledger records as the migration's output; answers how many. Only a
 * migration that will write nothing more (completed or cancelled) can be emptied: a running one
 * would write behind the delete. The ledger rows stay (the report and the manifest still prove
 * what became of each object); a second call deletes nothing already gone, and says so.
 */
export async function deleteMigrationOutputs(
  ctx: AppContext,
  tenantId: string,
  id: string,
): Promise<{ id: string; deleted: number }> {
  const m = await reportedMigration(ctx, tenantId, id);
  if (m.state !== 'completed' && m.state !== 'cancelled')
    throw problem(
      'invalid_transition',
      `the migration is ${m.state}; its outputs can be removed once it completed or was cancelled`,
      { details: { state: m.state } },
    );
  const objects = tenantStore(await ctx.objectStore.get(), tenantId);
  let deleted = 0;
  const keys: string[] = [];
  const flush = async () => {
    await eachLimited(keys.splice(0), DELETE_LANES, async (key) => {
      if (!(await objects.head(key))) return;
      await objects.delete(key);
      deleted += 1;
    });
  };
  for await (const row of ledgerRowsInOrder(ctx.db, m.id)) {
    for (const o of row.outputs) keys.push(o.key);
    if (keys.length >= 256) await flush();
  }
  await flush();
  return { id: m.id, deleted };
}
