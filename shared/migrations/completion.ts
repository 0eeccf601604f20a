/**
 * What happens once when a durable migration completes: the worker that completed it (the one
 * whose ledger write, or whose sweep, moved it to `completed`) signs the ledger's manifest and
 * stores it in the tenant's object store (shared/migrations/manifest.ts), so the completion
 * report is fixed when the work is. A tenant without an archive signing key gets a log line
 * saying how to have one made later; a worker that dies in between leaves the API to make the
 * manifest on demand, as it does for a running migration.
 */
import type { Knex } from 'knex';
import type { Logger } from '../logger.ts';
import type { KeyResolver } from '../pkcs7/types.ts';
import { AppError } from '../errors/index.ts';
import type { ObjectStore } from '../storage/index.ts';
import { loadMigration } from './ledger.ts';
import { ledgerManifest, storedManifestKey, storedManifestPath } from './manifest.ts';

export interface CompletionDeps {
  db: Knex;
  logger: Logger;
  /** The whole store; the manifest goes into the migration's tenant's part of it. */
  objects: ObjectStore;
  resolverFor(tenantId: string, decryptPrincipal: string | null): KeyResolver;
}

/** Runs once when the migration moved to `completed`; a failure is logged, the migration stays completed. */
export async function onMigrationCompleted(
  deps: CompletionDeps,
  migrationId: string,
): Promise<void> {
  const m = await loadMigration(deps.db, migrationId);
  if (!m) return;
  const log = deps.logger.child({ migrationId, tenantId: m.tenantId });
  let manifest: { jws: string; root: string; size: number };
  try {
    manifest = await ledgerManifest(deps.db, m, deps.resolverFor(m.tenantId, null));
  } catch (err) {
    if (!(err instanceof AppError) || err.code !== 'unprocessable') throw err;
    log.warn(
      'migration completed without a stored manifest: the tenant has no archive signing key; set one (archiveSigning) and GET the migration manifest to have it signed',
    );
    return;
  }
  const key = storedManifestKey(m.id);
  await deps.objects.put(
    storedManifestPath(m.tenantId, m.id),
    (async function* () {
      yield Buffer.from(manifest.jws, 'ascii');
    })(),
    { contentType: 'application/jose' },
  );
  log.info(
    { manifest: key, root: manifest.root, size: manifest.size },
    'migration completed; its signed manifest is stored',
  );
}
