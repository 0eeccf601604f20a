/**
 * Key settings: a description, the key's own rotation period (null follows the
 * tenant's effective policy), the minimum decryption version (Vault min_decryption_version:
 * older versions are kept but no longer decrypt or verify), and the rotation schedule. The
 * scheduler claims a due key by its `next_rotation_at` under a row lock, so one instance of any
 * number rotates it; the partial index keeps its scan of due keys small.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('keys', (t) => {
    t.text('description');
    t.integer('rotation_period_days');
    t.integer('min_decryption_version').notNullable().defaultTo(1);
    // Null: the key does not rotate by itself (imported or exchanged keys), or is not scheduled yet.
    t.timestamp('next_rotation_at', { useTz: true });
    t.timestamp('last_rotated_at', { useTz: true });
  });
  await knex.raw(
    "create index keys_rotation_due on keys (next_rotation_at) where state = 'active' and source = 'generated'",
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index if exists keys_rotation_due');
  await knex.schema.alterTable('keys', (t) => {
    for (const c of [
      'description',
      'rotation_period_days',
      'min_decryption_version',
      'next_rotation_at',
      'last_rotated_at',
    ])
      t.dropColumn(c);
  });
}
