/**
 * A scheduled deletion belongs to the key's own lifecycle (docs/aws-kms.md, "Key states"): the
 * `keys` row carries when it will be destroyed (`deletion_at`), since when and by whom it was
 * asked, instead of a table of its own that only the AWS KMS API knew of, which outlived a
 * native resume and destroyed the key later anyway.
 *
 * A pending deletion is a suspended key with `deletion_at` set; the check constraint keeps it so,
 * whatever writes the row. Rows of `key_deletions` carry over only where their key is still
 * suspended: an active key was resumed (which now cancels the deletion), a revoked or archived
 * one is already past it. The migration works on the tables alone, not on the services, so it
 * means the same whatever the code becomes later.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('keys', (t) => {
    t.timestamp('deletion_at', { useTz: true });
    t.timestamp('deletion_requested_at', { useTz: true });
    t.text('deletion_requested_by');
  });
  await knex.raw(`
    update keys k
       set deletion_at = d.delete_at,
           deletion_requested_at = d.requested_at,
           deletion_requested_by = 'unknown (scheduled before the deletion moved into the key)'
      from key_deletions d
     where d.tenant_id = k.tenant_id and d.kid = k.kid and k.state = 'suspended'`);
  await knex.raw(
    "alter table keys add constraint keys_deletion_pending_only_when_suspended check (deletion_at is null or state = 'suspended')",
  );
  // The sweep looks for due deletions across tenants.
  await knex.raw(
    'create index keys_deletion_at on keys (deletion_at) where deletion_at is not null',
  );
  await knex.schema.dropTable('key_deletions');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.createTable('key_deletions', (t) => {
    t.uuid('tenant_id').notNullable().references('tenants.id').onDelete('CASCADE');
    t.text('kid').notNullable();
    t.timestamp('delete_at', { useTz: true }).notNullable();
    t.timestamp('requested_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['tenant_id', 'kid']);
  });
  await knex.raw(`
    insert into key_deletions (tenant_id, kid, delete_at, requested_at)
    select tenant_id, kid, deletion_at, coalesce(deletion_requested_at, now())
      from keys where deletion_at is not null`);
  await knex.raw('drop index if exists keys_deletion_at');
  await knex.raw(
    'alter table keys drop constraint if exists keys_deletion_pending_only_when_suspended',
  );
  await knex.schema.alterTable('keys', (t) => {
    t.dropColumn('deletion_at');
    t.dropColumn('deletion_requested_at');
    t.dropColumn('deletion_requested_by');
  });
}
