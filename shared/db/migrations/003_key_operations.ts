/**
 * Bulk key operations that run off the request path (admin.keys.orchestrate above 50 keys).
 * Their progress lives here rather than in the memory of the process that started them, so any
 * instance behind the load balancer (or any cluster worker) answers the progress URL, and an
 * operation whose process died reads as interrupted instead of vanishing.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('key_operations', (t) => {
    t.uuid('id').primary();
    t.uuid('tenant_id').notNullable().references('tenants.id').onDelete('CASCADE');
    t.text('operation').notNullable();
    t.integer('total').notNullable();
    t.integer('done').notNullable().defaultTo(0);
    t.integer('failed').notNullable().defaultTo(0);
    // running → completed; a running row whose updated_at stops moving reads as interrupted.
    t.text('state').notNullable().defaultTo('running');
    // One result per key done so far, in order.
    t.jsonb('results').notNullable().defaultTo('[]');
    t.text('started_by').notNullable();
    t.timestamp('started_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('finished_at', { useTz: true });
    t.index(['tenant_id']);
    t.index(['finished_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('key_operations');
}
