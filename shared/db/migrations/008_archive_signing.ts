/**
 * Outside signers (docs/decisions.md): the tenant's default archive signing key, which re-signs a
 * SignedData whose signer's private key the tenant does not hold (at most one per tenant, by the
 * partial unique index), and the trust anchors `verify: "chain"` validates to (verify-only
 * certificates marked as anchors).
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('keys', (t) => {
    t.boolean('archive_signing').notNullable().defaultTo(false);
    t.boolean('trust_anchor').notNullable().defaultTo(false);
  });
  await knex.raw(
    'create unique index keys_archive_signing on keys (tenant_id) where archive_signing',
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index if exists keys_archive_signing');
  await knex.schema.alterTable('keys', (t) => {
    t.dropColumn('archive_signing');
    t.dropColumn('trust_anchor');
  });
}
