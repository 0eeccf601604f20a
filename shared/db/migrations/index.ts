/**
 * Migrations are listed here rather than discovered from disk, so the same list works under
 * Node's type stripping, jest and any bundler.
 */
import type { Knex } from 'knex';
import * as initial from './001_initial.ts';
import * as exchanges from './002_exchanges.ts';
import * as keyOperations from './003_key_operations.ts';
import * as changeLog from './004_change_log.ts';
import * as auditHead from './005_audit_head.ts';
import * as keySettings from './006_key_settings.ts';
import * as awsKms from './007_aws_kms.ts';
import * as masterSecrets from './007_master_secrets.ts';
import * as archiveSigning from './008_archive_signing.ts';
import * as keyUsages from './009_key_usages.ts';
import * as keyDeletion from './010_key_deletion.ts';
import * as migrationsLedger from './011_migrations_ledger.ts';
import * as transitFlags from './012_transit_flags.ts';

interface Migration {
  up(knex: Knex): Promise<void>;
  down(knex: Knex): Promise<void>;
}

const MIGRATIONS: Array<[string, Migration]> = [
  ['001_initial', initial],
  ['002_exchanges', exchanges],
  ['003_key_operations', keyOperations],
  ['004_change_log', changeLog],
  ['005_audit_head', auditHead],
  ['006_key_settings', keySettings],
  ['007_aws_kms', awsKms],
  ['007_master_secrets', masterSecrets],
  ['008_archive_signing', archiveSigning],
  ['009_key_usages', keyUsages],
  ['010_key_deletion', keyDeletion],
  ['011_migrations_ledger', migrationsLedger],
  ['012_transit_flags', transitFlags],
];

/** The migrations' names in order: the schema a backup names (shared/backup). */
export const MIGRATION_NAMES: readonly string[] = MIGRATIONS.map(([name]) => name);

/** knex migration source over the static list. */
export const migrationSource: Knex.MigrationSource<[string, Migration]> = {
  getMigrations: async () => MIGRATIONS,
  getMigrationName: ([name]) => name,
  getMigration: async ([, migration]) => migration,
};
