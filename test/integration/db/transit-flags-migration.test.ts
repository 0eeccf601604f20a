/**
 * Migration 012 moves Vault Transit's key flags out of the AWS API's tag table into the key's own
 * row: a `vault-transit:derived` or `vault-transit:deletion-allowed` tag of value 'true' sets its
 * column, any other value leaves it false, every tag of those names leaves `key_tags`, and other
 * tags stay. Down writes the flags that are true back as tags and drops the columns.
 */
import { randomUUID } from 'node:crypto';
import knexFactory, { type Knex } from 'knex';
import { migrationSource } from '../../../shared/db/migrations/index.ts';
import {
  createPostgresDatabase,
  SHARED_POSTGRES_URL,
  type TestDatabase,
} from '../../../support/database.ts';

describe('migration 012: Transit flags move from key tags into the key row', () => {
  let test: TestDatabase;
  let db: Knex;
  beforeAll(async () => {
    test = await createPostgresDatabase(SHARED_POSTGRES_URL);
    db = knexFactory({ client: 'pg', connection: test.url, pool: { min: 0, max: 2 } });
  });
  afterAll(async () => {
    await db?.destroy();
    await test?.drop();
  });

  it('when key_tags holds Transit flag tags beside AWS tags, then up moves the flags into the key columns and deletes those tags only, and down puts the true ones back', async () => {
    for (;;) {
      const [, pending] = (await db.migrate.list({ migrationSource })) as [
        unknown[],
        Array<[string]>,
      ];
      if (pending[0][0] === '012_transit_flags') break;
      await db.migrate.up({ migrationSource });
    }
    const tenantId = randomUUID();
    await db('tenants').insert({ id: tenantId, name: 'm' });
    for (const kid of ['derived', 'deletable', 'both', 'falsy', 'plain'])
      await db('keys').insert({
        id: randomUUID(),
        tenant_id: tenantId,
        kid,
        type: 'aes-256',
        usage: 'encrypt',
        state: 'active',
      });
    const tag = (kid: string, tag_key: string, tag_value: string) => ({
      tenant_id: tenantId,
      kid,
      tag_key,
      tag_value,
    });
    await db('key_tags').insert([
      tag('derived', 'vault-transit:derived', 'true'),
      tag('derived', 'team', 'payments'),
      tag('deletable', 'vault-transit:deletion-allowed', 'true'),
      tag('both', 'vault-transit:derived', 'true'),
      tag('both', 'vault-transit:deletion-allowed', 'true'),
      tag('falsy', 'vault-transit:derived', 'false'),
      tag('falsy', 'vault-transit:deletion-allowed', 'TRUE'),
      // A tag whose key row does not exist leaves with the rest.
      tag('gone', 'vault-transit:derived', 'true'),
    ]);

    // 012 alone: `down` below undoes the one migration last run, which must be this one.
    await db.migrate.up({ migrationSource });
    const flags = async () =>
      (
        await db('keys')
          .where({ tenant_id: tenantId })
          .orderBy('kid')
          .select('kid', 'transit_derived', 'transit_deletion_allowed')
      ).map((r) => [r.kid, r.transit_derived, r.transit_deletion_allowed]);
    expect(await flags()).toEqual([
      ['both', true, true],
      ['deletable', false, true],
      ['derived', true, false],
      ['falsy', false, false],
      ['plain', false, false],
    ]);
    const tags = async () =>
      (await db('key_tags').orderBy(['kid', 'tag_key'])).map((r) => [
        r.kid,
        r.tag_key,
        r.tag_value,
      ]);
    expect(await tags()).toEqual([['derived', 'team', 'payments']]);
    // Not null, false by default: a key written without them holds neither flag.
    await db('keys').insert({
      id: randomUUID(),
      tenant_id: tenantId,
      kid: 'later',
      type: 'aes-256',
      usage: 'encrypt',
      state: 'active',
    });
    const later = await db('keys').where({ tenant_id: tenantId, kid: 'later' }).first();
    expect([later.transit_derived, later.transit_deletion_allowed]).toEqual([false, false]);
    await expect(
      db('keys').where({ tenant_id: tenantId, kid: 'later' }).update({ transit_derived: null }),
    ).rejects.toThrow(/null value/);
    // A tag of a flag's name written after up (an AWS tag now) gives way to the flag on down.
    await db('key_tags').insert(tag('both', 'vault-transit:derived', 'false'));

    await db.migrate.down({ migrationSource });
    expect(await db.schema.hasColumn('keys', 'transit_derived')).toBe(false);
    expect(await db.schema.hasColumn('keys', 'transit_deletion_allowed')).toBe(false);
    expect(await tags()).toEqual([
      ['both', 'vault-transit:deletion-allowed', 'true'],
      ['both', 'vault-transit:derived', 'true'],
      ['deletable', 'vault-transit:deletion-allowed', 'true'],
      ['derived', 'team', 'payments'],
      ['derived', 'vault-transit:derived', 'true'],
    ]);

    // Up again: the same flags, as before.
    await db.migrate.up({ migrationSource });
    expect((await flags()).filter(([kid]) => kid !== 'later')).toEqual([
      ['both', true, true],
      ['deletable', false, true],
      ['derived', true, false],
      ['falsy', false, false],
      ['plain', false, false],
    ]);
  });
});
