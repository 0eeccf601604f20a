/** The initial schema: identities, keys, tokens and the audit chain. */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('tenants', (t) => {
    t.uuid('id').primary();
    t.text('name').notNullable();
    t.text('status').notNullable().defaultTo('active');
    t.boolean('is_platform').notNullable().defaultTo(false);
    t.jsonb('policy_overrides').notNullable().defaultTo('{}');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.schema.createTable('roles', (t) => {
    t.uuid('id').primary();
    t.uuid('tenant_id').notNullable().references('tenants.id').onDelete('CASCADE');
    t.text('name').notNullable();
    t.jsonb('permissions').notNullable().defaultTo('[]');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(['tenant_id', 'name']);
  });
  await knex.schema.createTable('workloads', (t) => {
    t.uuid('id').primary();
    t.uuid('tenant_id').notNullable().references('tenants.id').onDelete('CASCADE');
    t.text('name').notNullable();
    t.uuid('client_id').notNullable().unique();
    t.uuid('role_id').notNullable().references('roles.id');
    t.boolean('disabled').notNullable().defaultTo(false);
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(['tenant_id', 'name']);
  });
  await knex.schema.createTable('workload_secrets', (t) => {
    t.uuid('id').primary();
    t.uuid('workload_id').notNullable().references('workloads.id').onDelete('CASCADE');
    // HMAC-SHA-256(pepper, secret), hex: a database leak gives no usable secret.
    t.text('secret_hash').notNullable();
    t.timestamp('valid_from', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('valid_until', { useTz: true });
    t.index(['workload_id']);
  });
  await knex.schema.createTable('users', (t) => {
    t.uuid('id').primary();
    t.uuid('tenant_id').notNullable().references('tenants.id').onDelete('CASCADE');
    t.text('email').notNullable();
    t.text('password_hash').notNullable();
    t.uuid('role_id').notNullable().references('roles.id');
    t.boolean('disabled').notNullable().defaultTo(false);
    t.integer('failed_attempts').notNullable().defaultTo(0);
    t.integer('lockout_count').notNullable().defaultTo(0);
    t.timestamp('locked_until', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(['tenant_id', 'email']);
  });
  await knex.schema.createTable('password_resets', (t) => {
    t.uuid('id').primary();
    t.uuid('user_id').notNullable().references('users.id').onDelete('CASCADE');
    t.text('token_hash').notNullable().unique();
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('used_at', { useTz: true });
  });
  await knex.schema.createTable('outbox', (t) => {
    t.bigIncrements('id');
    t.text('recipient').notNullable();
    t.text('subject').notNullable();
    t.text('body').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.schema.createTable('keys', (t) => {
    t.uuid('id').primary();
    t.uuid('tenant_id').notNullable().references('tenants.id').onDelete('CASCADE');
    t.text('kid').notNullable();
    t.text('type').notNullable();
    t.text('usage').notNullable();
    t.text('state').notNullable().defaultTo('active');
    t.integer('current_version').notNullable().defaultTo(1);
    t.text('source').notNullable().defaultTo('generated');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(['tenant_id', 'kid']);
  });
  await knex.schema.createTable('key_versions', (t) => {
    t.uuid('id').primary();
    t.uuid('key_id').notNullable().references('keys.id').onDelete('CASCADE');
    t.integer('version').notNullable();
    // AES-256-GCM under the master key, bound to tenant, kid and version.
    t.binary('material').notNullable();
    t.jsonb('public_jwk');
    t.jsonb('certificate_chain');
    // Lookup columns for CMS identifiers: hex of DER issuer Name + ':' + hex serial; hex SKI.
    t.text('issuer_serial');
    t.text('subject_key_id');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(['key_id', 'version']);
    t.index(['issuer_serial']);
    t.index(['subject_key_id']);
  });
  await knex.schema.createTable('signing_keys', (t) => {
    t.text('kid').primary();
    t.text('alg').notNullable();
    t.binary('private_material').notNullable();
    t.jsonb('public_jwk').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('retired_at', { useTz: true });
    // Published in the JWKS until every token it signed has expired.
    t.timestamp('publish_until', { useTz: true });
  });
  await knex.schema.createTable('refresh_tokens', (t) => {
    t.text('token_hash').primary();
    t.uuid('family_id').notNullable();
    t.uuid('tenant_id').notNullable();
    // 'user' (password grant) or 'workload' (legacy login).
    t.text('subject_kind').notNullable();
    t.uuid('subject_id').notNullable();
    t.text('audience').notNullable();
    t.boolean('remember_me').notNullable().defaultTo(false);
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('used_at', { useTz: true });
    t.timestamp('revoked_at', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['family_id']);
  });
  await knex.schema.createTable('revoked_tokens', (t) => {
    t.text('jti').primary();
    t.uuid('tenant_id');
    t.text('sub');
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('revoked_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.text('revoked_by');
    t.text('reason').notNullable();
  });
  await knex.schema.createTable('audit_events', (t) => {
    t.bigIncrements('id');
    t.uuid('tenant_id').notNullable();
    // Position in the tenant's hash chain; each row's hash covers the previous row's hash.
    t.bigInteger('seq').notNullable();
    t.timestamp('at', { useTz: true }).notNullable();
    t.text('actor').notNullable();
    t.text('action').notNullable();
    t.text('outcome').notNullable();
    t.text('target');
    t.jsonb('details').notNullable().defaultTo('{}');
    t.text('prev_hash').notNullable();
    t.text('hash').notNullable();
    t.unique(['tenant_id', 'seq']);
    t.index(['tenant_id', 'at']);
  });
  // The head of each tenant's chain, locked while a batch is appended so that several API
  // processes extend one chain without forking it.
  await knex.schema.createTable('audit_heads', (t) => {
    t.uuid('tenant_id').primary();
    t.bigInteger('seq').notNullable();
    t.text('hash').notNullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of [
    'audit_heads',
    'audit_events',
    'revoked_tokens',
    'refresh_tokens',
    'signing_keys',
    'key_versions',
    'keys',
    'outbox',
    'password_resets',
    'users',
    'workload_secrets',
    'workloads',
    'roles',
    'tenants',
  ]) {
    await knex.schema.dropTableIfExists(table);
  }
}
