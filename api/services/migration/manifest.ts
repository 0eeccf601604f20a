/**
 * A migration's signed manifest and one object's inclusion proof (docs/manifest.md). A completed
 * migration answers the manifest its completing worker stored (shared/migrations/completion.ts);
 * a running one, or one whose worker died before storing it, a manifest made now from its
 * ledger: while it runs, a checkpoint of what is final so far.
 */
import { text } from 'node:stream/consumers';
import type { AppContext } from '../../context.ts';
import { problem } from '../../../shared/errors/index.ts';
import { tenantKeyResolver } from '../../../shared/keys/cms-resolver.ts';
import { inclusionProof } from '../../../shared/manifest/manifest.ts';
import {
  finalRows,
  ledgerManifest,
  storedManifestKey,
} from '../../../shared/migrations/manifest.ts';
import { tenantStore } from '../../../shared/storage/index.ts';
import { reportedMigration } from './migrations.ts';
import type { MigrationRow } from '../../../shared/migrations/index.ts';
import type { ManifestPayload } from '../../../shared/manifest/payload.ts';

/**
 * The stored manifest of a completed migration, with its tree head; null when none was stored,
 * or when the one stored is not of this completion (it names another migration, or counts other
 * than the ledger's now: a write of an earlier completion that landed after a retry began).
 */
async function storedManifest(
  ctx: AppContext,
  m: MigrationRow,
): Promise<{ jws: string; root: string; size: number } | null> {
  const store = tenantStore(await ctx.objectStore.get(), m.tenantId);
  const key = storedManifestKey(m.id);
  if (!(await store.head(key))) return null;
  const jws = await text(await store.get(key));
  let payload: ManifestPayload;
  try {
    payload = JSON.parse(Buffer.from(jws.split('.')[1] ?? '', 'base64url').toString('utf8'));
  } catch {
    return null;
  }
  const current =
    payload?.migration === m.id &&
    payload.counts?.total === m.objectsListed &&
    payload.counts.converted === m.objectsConverted &&
    payload.counts.refused === m.objectsRefused;
  if (!current) return null;
  return { jws, root: String(payload.tree.root), size: Number(payload.tree.size) };
}

/** The manifest of a migration's final rows, signed by the tenant's archive signing key. */
export async function migrationManifest(
  ctx: AppContext,
  tenantId: string,
  id: string,
): Promise<{ jws: string; root: string; size: number; state: string }> {
  const m = await reportedMigration(ctx, tenantId, id);
  const stored = m.state === 'completed' ? await storedManifest(ctx, m) : null;
  const made =
    stored ?? (await ledgerManifest(ctx.db, m, tenantKeyResolver(ctx, m.tenantId, null)));
  return { ...made, state: m.state };
}

/** The inclusion proof of one object's row in the tree of the migration's final rows. */
export async function migrationProof(
  ctx: AppContext,
  tenantId: string,
  id: string,
  sourceKey: string,
): Promise<{ index: number; path: string[]; size: number; root: string }> {
  const m = await reportedMigration(ctx, tenantId, id);
  const proof = await inclusionProof(finalRows(ctx.db, m.id), sourceKey);
  if (!proof) throw problem('not_found', 'no final ledger row of that object in this migration');
  return proof;
}
