/**
 * The change log: every state change that another instance holds in memory (a revoked token, a
 * key's state or versions, a workload's credentials, the signing keys, a tenant's status) is a
 * row here with a monotonic sequence number. Redis pub/sub carries the rows fast; each instance
 * also reads the rows after the last one it saw, every second and on reconnect, so a lost
 * message (Redis down, a subscriber reconnecting) delays a change by at most that period.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('change_log', (t) => {
    t.bigIncrements('seq').primary();
    t.text('kind').notNullable();
    t.text('ref').notNullable();
    // Small JSON the listeners need without another query (a revocation's expiry).
    t.text('data');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['created_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('change_log');
}
