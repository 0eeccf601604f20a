/**
 * Durable migrations (docs/migrations.md): `migrations` holds one migration's parameters, state,
 * listing cursor and counts; `migration_objects` is its ledger, one row per source object, the
 * truth a resumed migration, its report and its manifest are read from. Redis holds only the
 * chunks in flight. A frozen snapshot of the schema: nothing here imports live domain code.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('migrations', (t) => {
    t.uuid('id').primary();
    t.uuid('tenant_id').notNullable().references('tenants.id').onDelete('CASCADE');
    // {prefix} or {manifest: key of an object listing one source key per line}
    t.jsonb('source').notNullable();
    t.jsonb('metadata').notNullable().defaultTo('{}');
    t.text('output_prefix').notNullable();
    // The principal whose decryption right and budget the conversions use; null: no decryption.
    t.text('decrypt_principal');
    t.text('state').notNullable().defaultTo('running');
    // Objects per second; 0: no limit of its own.
    t.integer('rate_limit').notNullable().defaultTo(0);
    t.text('listing_cursor');
    t.boolean('listing_done').notNullable().defaultTo(false);
    // Each listed page is a step; the lister job of step n has a name derived from n.
    t.integer('listing_step').notNullable().defaultTo(0);
    t.integer('chunks_listed').notNullable().defaultTo(0);
    t.bigInteger('objects_listed').notNullable().defaultTo(0);
    t.bigInteger('objects_converted').notNullable().defaultTo(0);
    t.bigInteger('objects_refused').notNullable().defaultTo(0);
    t.bigInteger('bytes_read').notNullable().defaultTo(0);
    t.text('created_by').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('completed_at', { useTz: true });
    t.index(['tenant_id', 'created_at']);
  });
  await knex.raw(
    "alter table migrations add constraint migrations_state check (state in ('running', 'paused', 'cancelled', 'completed'))",
  );
  // The sweep looks for running migrations across tenants.
  await knex.raw("create index migrations_running on migrations (id) where state = 'running'");

  await knex.schema.createTable('migration_objects', (t) => {
    t.uuid('migration_id').notNullable().references('migrations.id').onDelete('CASCADE');
    // Byte order ("C"), so the ledger's order (the report's, the manifest's) is the same on
    // every database, whatever its locale, and the primary key serves it.
    t.specificType('source_key', 'text collate "C"').notNullable();
    // The chunk (queue job) the object belongs to: a chunk is re-enqueued by its name.
    t.text('chunk').notNullable();
    t.bigInteger('input_size');
    t.text('input_version');
    t.text('input_sha256');
    t.text('form');
    // null while pending; 'converted' or 'refused'
    t.text('outcome');
    t.text('problem');
    t.text('detail');
    // [{role, key, size, sha256, etag?, contentType}]
    t.jsonb('outputs');
    // [{kid, version, purpose}]
    t.jsonb('keys');
    // certificate SHA-256 (hex) of each original signer
    t.jsonb('signers');
    t.integer('attempts').notNullable().defaultTo(0);
    t.text('worker');
    t.text('lease_owner');
    t.timestamp('lease_expires_at', { useTz: true });
    t.timestamp('listed_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('started_at', { useTz: true });
    t.timestamp('finished_at', { useTz: true });
    t.primary(['migration_id', 'source_key']);
  });
  await knex.raw(
    "alter table migration_objects add constraint migration_objects_outcome check (outcome is null or outcome in ('converted', 'refused'))",
  );
  // A chunk's rows, and the sweep's search for chunks with unfinished rows.
  await knex.raw('create index migration_objects_chunk on migration_objects (migration_id, chunk)');
  await knex.raw(
    'create index migration_objects_pending on migration_objects (migration_id, chunk) where outcome is null',
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('migration_objects');
  await knex.schema.dropTable('migrations');
}
