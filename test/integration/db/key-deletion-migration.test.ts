/**
 * Migration 010 moves scheduled deletions from the `key_deletions` table into the key's own row:
 * a deletion of a suspended key carries over, one whose key was resumed or revoked meanwhile does
 * not (resume now cancels, revoke settles), the table is gone, and the row can no longer hold a
 * deletion outside the suspended state. Down brings the table back with the pending ones. A
 * backup taken before the migration restores into its own schema and is migrated on, so its
 * pending deletions arrive in the key rows too.
 */
import { randomUUID } from 'node:crypto';
import knexFactory, { type Knex } from 'knex';
import { MIGRATION_NAMES, migrationSource } from '../../../shared/db/migrations/index.ts';
import { openDatabase } from '../../../shared/db/knex.ts';
import { snapshotLines } from '../../../shared/backup/snapshot.ts';
import { encryptBackup } from '../../../shared/backup/sealed-file.ts';
import { restoreBackup } from '../../../shared/backup/restore.ts';
import {
  createPostgresDatabase,
  SHARED_POSTGRES_URL,
  type TestDatabase,
} from '../../../support/database.ts';

describe('migration 010: a pending deletion moves into the key row', () => {
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

  it('when key_deletions holds rows for suspended, resumed and revoked keys, then only the suspended key carries its deletion, and down puts it back', async () => {
    for (;;) {
      const [, pending] = (await db.migrate.list({ migrationSource })) as [
        unknown[],
        Array<[string]>,
      ];
      if (pending[0][0] === '010_key_deletion') break;
      await db.migrate.up({ migrationSource });
    }
    const tenantId = randomUUID();
    await db('tenants').insert({ id: tenantId, name: 'm' });
    const deleteAt = new Date('2027-01-08T00:00:00Z');
    const requestedAt = new Date('2027-01-01T00:00:00Z');
    for (const [kid, state] of [
      ['pending', 'suspended'],
      ['resumed', 'active'],
      ['revoked', 'revoked'],
    ]) {
      await db('keys').insert({
        id: randomUUID(),
        tenant_id: tenantId,
        kid,
        type: 'aes-256',
        usage: 'encrypt',
        state,
      });
      await db('key_deletions').insert({
        tenant_id: tenantId,
        kid,
        delete_at: deleteAt,
        requested_at: requestedAt,
      });
    }

    // 010 alone: `down` below undoes the one migration last run, which must be this one.
    await db.migrate.up({ migrationSource });
    const rows = await db('keys')
      .where({ tenant_id: tenantId })
      .orderBy('kid')
      .select('kid', 'state', 'deletion_at', 'deletion_requested_at');
    expect(rows.map((r) => [r.kid, r.state, r.deletion_at?.toISOString() ?? null])).toEqual([
      ['pending', 'suspended', deleteAt.toISOString()],
      ['resumed', 'active', null],
      ['revoked', 'revoked', null],
    ]);
    expect(rows[0].deletion_requested_at.toISOString()).toBe(requestedAt.toISOString());
    expect(await db.schema.hasTable('key_deletions')).toBe(false);
    // Whatever writes the row, a deletion is pending only on a suspended key.
    await expect(
      db('keys').where({ tenant_id: tenantId, kid: 'resumed' }).update({ deletion_at: deleteAt }),
    ).rejects.toThrow(/keys_deletion_pending_only_when_suspended/);

    await db.migrate.down({ migrationSource });
    expect(
      (await db('key_deletions').select('kid', 'delete_at')).map((r) => [
        r.kid,
        r.delete_at.toISOString(),
      ]),
    ).toEqual([['pending', deleteAt.toISOString()]]);
    expect(await db.schema.hasColumn('keys', 'deletion_at')).toBe(false);
  });

  it('when a backup taken before the migration holds a pending deletion, then the restore carries it into the key row', async () => {
    const old = await createPostgresDatabase(SHARED_POSTGRES_URL);
    const target = await createPostgresDatabase(SHARED_POSTGRES_URL);
    const before = MIGRATION_NAMES.slice(0, MIGRATION_NAMES.indexOf('010_key_deletion'));
    const source = await openDatabase({ databaseUrl: old.url, migrations: before });
    let restored: Knex | undefined;
    try {
      const tenantId = randomUUID();
      await source('tenants').insert({ id: tenantId, name: 'b' });
      await source('keys').insert({
        id: randomUUID(),
        tenant_id: tenantId,
        kid: 'pending',
        type: 'aes-256',
        usage: 'encrypt',
        state: 'suspended',
      });
      const deleteAt = new Date('2027-02-01T00:00:00Z');
      await source('key_deletions').insert({
        tenant_id: tenantId,
        kid: 'pending',
        delete_at: deleteAt,
      });
      const chunks: Buffer[] = [];
      for await (const c of encryptBackup(snapshotLines(source), 'a passphrase for this test'))
        chunks.push(c);
      const report = await restoreBackup({
        open: async function* () {
          yield* chunks;
        },
        passphrase: 'a passphrase for this test',
        target: { databaseUrl: target.url! },
      });
      expect(report.migrations).toEqual(before);
      restored = knexFactory({ client: 'pg', connection: target.url, pool: { min: 0, max: 1 } });
      const row = await restored('keys').where({ tenant_id: tenantId, kid: 'pending' }).first();
      expect([row.state, row.deletion_at.toISOString()]).toEqual([
        'suspended',
        deleteAt.toISOString(),
      ]);
      expect(await restored.schema.hasTable('key_deletions')).toBe(false);
    } finally {
      await source.destroy();
      await restored?.destroy();
      await old.drop();
      await target.drop();
    }
  }, 60_000);
});
