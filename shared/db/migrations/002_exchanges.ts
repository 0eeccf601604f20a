/**
 * Cryptographic exchanges: an offer of one key version from one tenant to another. The
 * `payload` holds what the receiver gets (a JWE wrapped for the receiver's key, or the public
 * key); it is cleared as soon as the offer is decided or expires, so no copy lingers.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('cryptographic_exchanges', (t) => {
    t.uuid('id').primary();
    t.uuid('from_tenant_id').notNullable().references('tenants.id').onDelete('CASCADE');
    t.uuid('to_tenant_id').notNullable().references('tenants.id').onDelete('CASCADE');
    t.text('source_kid').notNullable();
    t.integer('source_version').notNullable();
    t.text('key_type').notNullable();
    t.text('usage').notNullable();
    // 'public' (public part only) or 'wrapped' (a copy encrypted to a key of the receiver).
    t.text('mode').notNullable();
    t.text('wrapping_kid');
    t.integer('wrapping_version');
    t.text('payload');
    // SHA-256 of the public key (SPKI DER), so the receiver can compare it out of band.
    t.text('public_key_sha256');
    // Public metadata copied from the offered version: certificate chain and CMS lookup columns.
    t.jsonb('certificate_chain');
    t.text('issuer_serial');
    t.text('subject_key_id');
    // pending → accepted | rejected | cancelled | expired.
    t.text('state').notNullable().defaultTo('pending');
    t.text('accepted_kid');
    t.text('created_by').notNullable();
    t.text('decided_by');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('decided_at', { useTz: true });
    t.index(['from_tenant_id']);
    t.index(['to_tenant_id']);
    t.index(['state', 'expires_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('cryptographic_exchanges');
}
