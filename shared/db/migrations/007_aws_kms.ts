/**
 * The AWS KMS-compatible API (docs/aws-kms.md): workload access keys for SigV4 (the secret
 * sealed under the master key like key material, since SigV4 verification needs the secret
 * itself), tenant-scoped aliases, key tags, and scheduled deletions (a key pending deletion is
 * suspended and destroyed only at the end of its window).
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('access_keys', (t) => {
    t.text('id').primary();
    t.uuid('tenant_id').notNullable().references('tenants.id').onDelete('CASCADE');
    t.uuid('workload_id').notNullable().references('workloads.id').onDelete('CASCADE');
    t.binary('secret').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['workload_id']);
  });
  await knex.schema.createTable('key_aliases', (t) => {
    t.uuid('tenant_id').notNullable().references('tenants.id').onDelete('CASCADE');
    t.text('name').notNullable();
    t.text('kid').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['tenant_id', 'name']);
  });
  await knex.schema.createTable('key_tags', (t) => {
    t.uuid('tenant_id').notNullable().references('tenants.id').onDelete('CASCADE');
    t.text('kid').notNullable();
    t.text('tag_key').notNullable();
    t.text('tag_value').notNullable();
    t.primary(['tenant_id', 'kid', 'tag_key']);
  });
  await knex.schema.createTable('key_deletions', (t) => {
    t.uuid('tenant_id').notNullable().references('tenants.id').onDelete('CASCADE');
    t.text('kid').notNullable();
    t.timestamp('delete_at', { useTz: true }).notNullable();
    t.timestamp('requested_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['tenant_id', 'kid']);
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['key_deletions', 'key_tags', 'key_aliases', 'access_keys'])
    await knex.schema.dropTableIfExists(table);
}
