/**
 * A migration's objects, read back and removed through the ledger: a client that migrated a
 * folder downloads each object's result (and a SignedData's content) by its source key, and
 * once it has them removes in one call everything the migration wrote, and in another the
 * inputs it converted. Only what the ledger records for this migration is ever opened or
 * deleted, so no call reaches any other object of the tenant's storage, whatever the prefixes.
 */
import type { Readable } from 'node:stream';
import type { AppContext } from '../../context.ts';
import { AppError, problem } from '../../../shared/errors/index.ts';
import { tenantStore } from '../../../shared/storage/index.ts';
import { ledgerRowOf, ledgerRowsInOrder } from '../../../shared/migrations/ledger.ts';
import type { LedgerOutput, LedgerRow } from '../../../shared/migrations/index.ts';
import { eachLimited } from '../../../shared/each-limited.ts';
import { sourceVersionOf } from '../../../shared/queues/index.ts';
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

/** Most converted objects one call of the outputs stream carries. */
export const OUTPUTS_PAGE_MAX = 10_000;

/**
 * Outputs opened ahead of the one being sent: a store's get is a round trip (four file system
 * requests, or an HTTP request to S3) and one after the other they, not the bytes, set the pace.
 */
const OPEN_AHEAD = 8;

/** A header value the ledger gave us, kept to one line whatever it holds. */
const oneLine = (v: string) => (/[\r\n]/.test(v) ? 'application/octet-stream' : v);

/**
 * The outputs of up to `limit` converted objects after source key `after`, in source-key order,
 * as one multipart/mixed body (RFC 2046) under `boundary`: a part per output, a SignedData's
 * content before its result, each part's headers giving its Content-Type, Content-Length, the
 * source key (percent-encoded), the role and the SHA-256 the ledger records, so a client that
 * migrated a folder takes every result in one request instead of one per object. An output gone
 * from storage is left out (asked for alone, it answers its 404); one whose bytes are not the
 * length the ledger records cuts the stream. The migration is looked up before the first byte:
 * another tenant's, or none, is the usual 404. Up to OPEN_AHEAD outputs are opened ahead, in
 * order, and whatever is open when the answer ends, however it ends, is released.
 */
export async function migrationOutputsBody(
  ctx: AppContext,
  tenantId: string,
  id: string,
  page: { after: string | null; limit: number },
  boundary: string,
): Promise<AsyncIterable<Buffer>> {
  const m = await reportedMigration(ctx, tenantId, id);
  const objects = tenantStore(await ctx.objectStore.get(), tenantId);
  /** Each output of the page's rows, in the answer's order. */
  async function* wanted(): AsyncGenerator<{ row: LedgerRow; o: LedgerOutput }> {
    let rows = 0;
    for await (const row of ledgerRowsInOrder(ctx.db, m.id, {
      after: page.after,
      outcome: 'converted',
      pageSize: Math.min(page.limit, 1000),
    })) {
      for (const o of row.outputs.filter((x) => x.role === 'content')) yield { row, o };
      for (const o of row.outputs.filter((x) => x.role !== 'content')) yield { row, o };
      // The page ends with its last row: no further row is read from the ledger.
      if (++rows === page.limit) return;
    }
  }
  /** The output's bytes, or null when it is gone from storage. */
  const open = (key: string): Promise<Readable | null> => {
    const body = objects.get(key).catch((err: unknown) => {
      if (err instanceof AppError && err.code === 'not_found') return null;
      throw err;
    });
    // Awaited in its turn; until then a failure must not count as unhandled.
    body.catch(() => {});
    return body;
  };
  return (async function* () {
    const ahead: Array<{ row: LedgerRow; o: LedgerOutput; body: Promise<Readable | null> }> = [];
    const source = wanted();
    let exhausted = false;
    const fill = async () => {
      while (!exhausted && ahead.length < OPEN_AHEAD) {
        const next = await source.next();
        if (next.done) exhausted = true;
        else ahead.push({ ...next.value, body: open(next.value.o.key) });
      }
    };
    let first = true;
    try {
      for (await fill(); ahead.length > 0; await fill()) {
        const { row, o, body: opening } = ahead.shift()!;
        const body = await opening;
        if (!body) continue;
        // Released however the answer ends: read to its end, cut, or left by its client.
        try {
          yield Buffer.from(
            `${first ? '' : '\r\n'}--${boundary}\r\n` +
              `Content-Type: ${oneLine(o.contentType)}\r\n` +
              `Content-Length: ${o.size}\r\n` +
              `Keyward-Source-Key: ${encodeURIComponent(row.sourceKey)}\r\n` +
              `Keyward-Role: ${o.role}\r\n` +
              `Keyward-Sha256: ${o.sha256}\r\n\r\n`,
            'latin1',
          );
          first = false;
          let n = 0;
          for await (const chunk of body as AsyncIterable<Buffer>) {
            n += chunk.length;
            if (n > o.size) break;
            yield chunk;
          }
          if (n !== o.size)
            throw problem(
              'internal',
              `output ${o.key} is not the ${o.size} bytes the ledger records`,
            );
        } finally {
          body.destroy();
        }
      }
    } finally {
      for (const e of ahead.splice(0))
        void e.body.then(
          (b) => b?.destroy(),
          () => {},
        );
      await source.return(undefined);
    }
    yield Buffer.from(`${first ? '' : '\r\n'}--${boundary}--\r\n`, 'latin1');
  })();
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

/** Deletes run at once while a migration's objects are removed. */
const DELETE_LANES = 16;

/** What a removal of a migration's objects did. */
export interface Removed {
  id: string;
  deleted: number;
  /** Inputs left in place: changed since the migration read them. */
  kept: number;
}

/**
 * Removes objects the ledger names, never any other: with `outputs`, every object the migration
 * wrote (results and SignedData contents); with `inputs`, each source object it converted, if it
 * is still the version the migration read (one replaced since is kept and counted). Only a
 * migration that will read and write nothing more (completed or cancelled) can be emptied: a
 * running one would write behind the delete. The ledger rows stay (the report and the manifest
 * still prove what became of each object); a second call deletes nothing already gone.
 */
export async function deleteMigrationObjects(
  ctx: AppContext,
  tenantId: string,
  id: string,
  which: 'outputs' | 'inputs',
): Promise<Removed> {
  const m = await reportedMigration(ctx, tenantId, id);
  if (m.state !== 'completed' && m.state !== 'cancelled')
    throw problem(
      'invalid_transition',
      `the migration is ${m.state}; its ${which} can be removed once it completed or was cancelled`,
      { details: { state: m.state } },
    );
  const objects = tenantStore(await ctx.objectStore.get(), tenantId);
  let deleted = 0;
  let kept = 0;
  /** Keys to delete, each with the version it must still have (null: any). */
  const batch: Array<{ key: string; version: string | null }> = [];
  const flush = async () => {
    await eachLimited(batch.splice(0), DELETE_LANES, async ({ key, version }) => {
      const info = await objects.head(key);
      if (!info) return;
      if (version !== null && sourceVersionOf(info) !== version) {
        kept += 1;
        return;
      }
      await objects.delete(key);
      deleted += 1;
    });
  };
  for await (const row of ledgerRowsInOrder(ctx.db, m.id)) {
    if (which === 'outputs') for (const o of row.outputs) batch.push({ key: o.key, version: null });
    else if (row.outcome === 'converted' && row.inputVersion)
      batch.push({ key: row.sourceKey, version: row.inputVersion });
    if (batch.length >= 256) await flush();
  }
  await flush();
  return { id: m.id, deleted, kept };
}
