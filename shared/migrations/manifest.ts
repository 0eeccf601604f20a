/**
 * A migration's signed manifest made from its ledger (docs/manifest.md): the rows that have an
 * outcome, in source-key order, are the leaves; the tenant's archive signing key signs the tree
 * head with the migration's parameters and counts. The worker that completes a migration stores
 * it once in the tenant's object store (`storedManifestKey`); the API serves that one for a
 * completed migration and makes a checkpoint on demand while it runs.
 */
import type { Knex } from 'knex';
import type { KeyResolver } from '../pkcs7/types.ts';
import { archiveManifestSigner, buildManifest } from '../manifest/manifest.ts';
import type { ManifestPayload } from '../manifest/payload.ts';
import type { LedgerRow as ManifestRow } from '../manifest/row.ts';
import type { LedgerRow, MigrationRow } from './index.ts';
import { ledgerRowsInOrder } from './ledger.ts';
import { RESERVED_SEGMENT, tenantPrefix } from '../storage/index.ts';

/** SHA-256 of zero bytes: the input digest of an object refused before a byte of it was read. */
const NOTHING_READ = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

/**
 * Where the completing worker stores a migration's manifest, in the tenant's store: below the
 * segment Keyward keeps for itself, which no upload, delete or output prefix of the tenant's may
 * name (shared/storage/keys.ts), so an output tree holds only outputs and the stored manifest is
 * only ever the worker's.
 */
export const storedManifestKey = (migrationId: string) =>
  `${RESERVED_SEGMENT}/migrations/${migrationId}/manifest.jws`;

/**
 * The stored manifest's key in the whole store, where Keyward writes and removes it (the tenant's
 * view of the store only reads below `.keyward/`).
 */
export const storedManifestPath = (tenantId: string, migrationId: string) =>
  tenantPrefix(tenantId) + storedManifestKey(migrationId);

/** The leaf of a ledger row with an outcome; null while the object is pending. */
function manifestRowOf(r: LedgerRow): ManifestRow | null {
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

/** The rows with an outcome, in source-key order: the manifest's leaves. */
export async function* finalRows(db: Knex, migrationId: string): AsyncGenerator<ManifestRow> {
  for await (const r of ledgerRowsInOrder(db, migrationId)) {
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

/**
 * The manifest of a migration's final rows, signed by the tenant's archive signing key through
 * `resolver` (unprocessable problem when the tenant has none).
 */
export async function ledgerManifest(
  db: Knex,
  m: MigrationRow,
  resolver: Pick<KeyResolver, 'archiveSigningKey'>,
): Promise<{ jws: string; root: string; size: number }> {
  const signer = await archiveManifestSigner(resolver);
  const { jws, root, size } = await buildManifest(
    finalRows(db, m.id),
    { migration: m.id, tenant: m.tenantId, parameters: parametersOf(m) },
    signer,
  );
  return { jws, root, size };
}
