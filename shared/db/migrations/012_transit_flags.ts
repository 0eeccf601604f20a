/**
 * Vault Transit's key flags belong to the key's own row (docs/vault-transit.md): `derived` (every
 * request names a context) and `deletion_allowed` (DELETE keys/:name may destroy the key) were
 * rows of `key_tags` under `vault-transit:derived` and `vault-transit:deletion-allowed`, the AWS
 * API's tag table, so AWS ListResourceTags showed them and AWS TagResource / UntagResource could
 * change a key's Transit semantics. The rows move into two columns of `keys` (a tag value 'true'
 * is true, anything else false) and leave the tag table; tags of those names written afterwards
 * are plain AWS tags. The migration works on the tables alone, not on the services, so it means
 * the same whatever the code becomes later.
 */
import type { Knex } from 'knex';

/** Column of `keys` ← tag key of `key_tags`, as they were before this migration. */
const FLAGS: ReadonlyArray<readonly [string, string]> = [
  ['transit_derived', 'vault-transit:derived'],
  ['transit_deletion_allowed', 'vault-transit:deletion-allowed'],
];

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('keys', (t) => {
    for (const [column] of FLAGS) t.boolean(column).notNullable().defaultTo(false);
  });
  for (const [column, tag] of FLAGS) {
    await knex.raw(
      `update keys k set ?? = true
         from key_tags t
        where t.tenant_id = k.tenant_id and t.kid = k.kid and t.tag_key = ? and t.tag_value = 'true'`,
      [column, tag],
    );
    await knex('key_tags').where({ tag_key: tag }).delete();
  }
}

export async function down(knex: Knex): Promise<void> {
  // A tag of the same name written after `up` is an AWS tag: the flag's value takes its place.
  for (const [column, tag] of FLAGS)
    await knex.raw(
      `insert into key_tags (tenant_id, kid, tag_key, tag_value)
       select tenant_id, kid, ?, 'true' from keys where ??
       on conflict (tenant_id, kid, tag_key) do update set tag_value = excluded.tag_value`,
      [tag, column],
    );
  await knex.schema.alterTable('keys', (t) => {
    for (const [column] of FLAGS) t.dropColumn(column);
  });
}
