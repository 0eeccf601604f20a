/**
 * A migration's signed manifest and one object's inclusion proof, made from its ledger on demand
 * (docs/manifest.md): the rows that have an outcome, in source-key order, are the leaves; the
 * tenant's archive signing key signs the tree head with the migration's parameters and counts.
 * Asked while the migration runs, it is a checkpoint of what is final so far.
 */
import type { AppContext } from '../../context.ts';
import { problem } from '../../../shared/errors/index.ts';
import { tenantKeyResolver } from '../../../shared/keys/cms-resolver.ts';
import {
  archiveManifestSigner,
  buildManifest,
  inclusionProof,
} from '../../../shared/manifest/manifest.ts';
import type { ManifestPayload } from '../../../shared/manifest/payload.ts';
import type { LedgerRow as ManifestRow } from '../../../shared/manifest/row.ts';
import { type LedgerRow, type MigrationRow } from '../../../shared/migrations/index.ts';
import { ledgerRowsInOrder } from '../../../shared/migrations/ledger.ts';
import { reportedMigration } from './migrations.ts';

/** SHA-256 of zero bytes: the input digest of an object refused before a byte of it was read. */
const NOTHING_READ = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

/** The leaf of a ledger row with an outcome; null while the object is pending. */
export function manifestRowOf(r: LedgerRow): ManifestRow | null {
  if (r.outcome === null) return null;
  return {
    sourceKey: r.sourceKey,
    inputSize: r.inputSize ?? 0,
    inputSha256: r.inputSha256 ?? NOTHING_READ,
    form: r.form ?? 'unknown',
    outcome: r.outcome,
    ...(r.outcome === 'refused'
      ? { problem: r.problem ?? 'internal', detail: r.detail ?? '' }
      : {}),
    outputs: r.outputs.map((o) => ({ key: o.key, size: o.size, sha256: o.sha256 })),
    keys: r.keys.map((k) => ({ kid: k.kid, version: k.version })),
    signers: r.signers,
    attempts: r.attempts,
  };
}

async function* finalRows(ctx: AppContext, migrationId: string): AsyncGenerator<ManifestRow> {
  for await (const r of ledgerRowsInOrder(ctx.db, migrationId)) {
    const row = manifestRowOf(r);
    if (row) yield row;
  }
}

/** What the migration was asked to do, as its manifest states it. */
function parametersOf(m: MigrationRow): ManifestPayload['parameters'] {
  const target = m.metadata.targetKid;
  const targets = Array.isArray(target) ? target.map(String) : target ? [String(target)] : [];
  const signer = m.metadata.signerKid;
  return {
    source: 'prefix' in m.source ? m.source.prefix : m.source.manifest,
    outputPrefix: m.outputPrefix,
    targets,
    signer: typeof signer === 'string' ? signer : null,
  };
}

/** The manifest of a migration's final rows, signed by the tenant's archive signing key. */
export async function migrationManifest(
  ctx: AppContext,
  tenantId: string,
  id: string,
): Promise<{ jws: string; root: string; size: number; state: string }> {
  const m = await reportedMigration(ctx, tenantId, id);
  const signer = await archiveManifestSigner(tenantKeyResolver(ctx, m.tenantId, null));
  const { jws, root, size } = await buildManifest(
    finalRows(ctx, m.id),
    { migration: m.id, tenant: m.tenantId, parameters: parametersOf(m) },
    signer,
  );
  return { jws, root, size, state: m.state };
}

/** The inclusion proof of one object's row in the tree of the migration's final rows. */
export async function migrationProof(
  ctx: AppContext,
  tenantId: string,
  id: string,
  sourceKey: string,
): Promise<{ index: number; path: string[]; size: number; root: string }> {
  const m = await reportedMigration(ctx, tenantId, id);
  const proof = await inclusionProof(finalRows(ctx, m.id), sourceKey);
  if (!proof) throw problem('not_found', 'no final ledger row of that object in this migration');
  return proof;
}
