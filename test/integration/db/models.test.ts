/**
 * The objection models: bound to a database per call, so two databases in one process never
 * see each other's rows, and JSON columns read back as values on either engine.
 */
import { randomUUID } from 'node:crypto';
import { openDatabase, type Db } from '../../../shared/db/knex.ts';
import { createTestDatabase, TEST_ENGINE, type TestDatabase } from '../../../support/database.ts';
import { Tenant } from '../../../shared/db/models/tenants.ts';
import { Role } from '../../../shared/db/models/identities.ts';
import { pageOf } from '../../../shared/db/page.ts';

describe(`objection models (${TEST_ENGINE})`, () => {
  let test: TestDatabase;
  let db: Db;
  let other: Db;
  beforeAll(async () => {
    test = await createTestDatabase();
    db = await openDatabase({ databaseUrl: test.url, dataDir: null });
    other = await openDatabase({ dataDir: null });
  });
  afterAll(async () => {
    await db.destroy();
    await other.destroy();
    await test.drop();
  });

  it('when two databases are open in one process, then each query reads the database it was given', async () => {
    const id = randomUUID();
    await Tenant.query(db).insert({ id, name: 'only-here' });
    expect((await Tenant.query(db).findById(id))?.name).toBe('only-here');
    expect(await Tenant.query(other).findById(id)).toBeUndefined();
  });

  it('when JSON columns are written and read through the models, then arrays and objects come back as values', async () => {
    const tenantId = randomUUID();
    await Tenant.query(db).insert({
      id: tenantId,
      name: 'json',
      policy_overrides: { template: 'strict', allowedKeyTypes: ['aes-256'] },
    });
    const role = await Role.query(db).insert({
      id: randomUUID(),
      tenant_id: tenantId,
      name: 'r',
      permissions: ['admin.keys.read', 'crypto.encrypt'],
    });
    expect((await Role.query(db).findById(role.id))?.permissions).toEqual([
      'admin.keys.read',
      'crypto.encrypt',
    ]);
    expect((await Tenant.query(db).findById(tenantId))?.policy_overrides).toEqual({
      template: 'strict',
      allowedKeyTypes: ['aes-256'],
    });
    // A hot path that joins with raw knex parses the column through the model all the same.
    const raw = await db('roles').where({ id: role.id }).first('permissions');
    expect(Role.fromDatabaseJson({ permissions: raw.permissions }).permissions).toEqual([
      'admin.keys.read',
      'crypto.encrypt',
    ]);
  });

  it('when a list is paged, then the pages hold every row once, in order, and a malformed cursor is a 400', async () => {
    const tenantId = randomUUID();
    await Tenant.query(db).insert({ id: tenantId, name: 'paged' });
    const ids = await Promise.all(
      Array.from(
        { length: 5 },
        async (_, i) =>
          (
            await Role.query(db).insert({
              id: randomUUID(),
              tenant_id: tenantId,
              name: `r${i}`,
              permissions: [],
            })
          ).id,
      ),
    );
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { items: string[]; nextCursor: string | null } = await pageOf(
        Role.query(db).where({ tenant_id: tenantId }),
        'id',
        { limit: 2, cursor: cursor && Buffer.from(cursor, 'base64url').toString('utf8') },
        (r) => r.id,
      );
      seen.push(...page.items);
      cursor = page.nextCursor;
    } while (cursor);
    expect(seen).toEqual([...ids].sort());
    await expect(
      pageOf(Role.query(db), 'id', { limit: 2, cursor: 'not-a-uuid' }, (r) => r.id),
    ).rejects.toMatchObject({ status: 400 });
  });
});
