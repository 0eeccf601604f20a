/**
 * Secrets that used to be derived from the master key on every start (the encryption-context
 * binding key, the client-secret pepper) are stored sealed, created once from the key they were
 * derived from, so that a rotation of the master key keeps them: ciphertexts bound to a context
 * keep decrypting and workloads keep logging in after the old key id is gone.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('master_secrets', (t) => {
    t.text('name').primary();
    // Sealed under the master keyring like key material, bound to the name.
    t.binary('material').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('master_secrets');
}
