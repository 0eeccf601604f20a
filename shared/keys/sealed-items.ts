/**
 * Every value sealed under the master keyring, in one table: where it lives, its primary key,
 * the context it is sealed under and the files that seal it. The start check, the restore's
 * check, the status counts, the rewrap and the sealed master secrets all read this list, so a
 * new sealed column is added here once; test/unit/keys/sealed-sources.test.ts finds every call
 * of a master key's `seal` in the source tree and fails until its file is listed here (the
 * access keys' secrets were once sealed without being listed: the rewrap left them under the
 * old key, the status said that key sealed nothing, and removing it broke every SigV4 call).
 * The id a blob names is read in SQL from its header (v2: 0x02 | length | id), so counting and
 * finding what is left to rewrap never load the blobs into the process.
 */
import type { Knex } from 'knex';
import { ConfigError } from '../config/index.ts';
import { IntegrityError, type MasterKey, type SealContext } from '../crypto/master-key.ts';

/** The seal context's tenant of the token signing keys (api/services/auth/signing-keys.ts). */
export const SIGNING_KEYS_SEAL_TENANT = 'platform-signing-keys';
/** The seal context's tenant of the master secrets. */
const MASTER_SECRETS_SEAL_TENANT = 'platform-master-secrets';

/** The seal context of a workload access key's secret (api/services/auth/access-keys.ts). */
export const accessKeySealContext = (tenantId: string, accessKeyId: string): SealContext => ({
  tenantId,
  kid: `access-key:${accessKeyId}`,
  version: 0,
});

/** One kind of sealed item. */
export interface SealedSource {
  /** A short name for logs and the status (`key-versions`). */
  name: string;
  table: string;
  /** Primary key column of `table`; a text cast of it orders the rewrap's scan. */
  pk: string;
  column: string;
  /** Rows with `pk`, `material` and what `context` needs, filtered by `where`. */
  select(db: Knex): Knex.QueryBuilder;
  context(row: Record<string, unknown>): SealContext;
  /**
   * The files (from the repository's root) that seal new values of this source with the master
   * key, one entry per call: a file sealing two kinds of value is listed by two sources.
   */
  sealedIn: readonly string[];
}

/** The sealed items, in the order a rewrap walks them. */
export const SEALED_SOURCES: readonly SealedSource[] = [
  {
    name: 'key-versions',
    table: 'key_versions',
    pk: 'id',
    column: 'material',
    select: (db) =>
      db('key_versions as kv')
        .join('keys as k', 'k.id', 'kv.key_id')
        .select(
          db.raw('kv.id::text as pk'),
          'kv.material as material',
          'kv.version',
          'k.tenant_id',
          'k.kid',
        ),
    context: (r) => ({
      tenantId: r.tenant_id as string,
      kid: r.kid as string,
      version: r.version as number,
    }),
    sealedIn: ['api/services/keys/store.ts'],
  },
  {
    name: 'signing-keys',
    table: 'signing_keys',
    pk: 'kid',
    column: 'private_material',
    select: (db) =>
      db('signing_keys').select(db.raw('kid as pk'), 'private_material as material', 'kid'),
    context: (r) => ({ tenantId: SIGNING_KEYS_SEAL_TENANT, kid: r.kid as string, version: 1 }),
    sealedIn: ['api/services/auth/signing-keys.ts'],
  },
  {
    name: 'master-secrets',
    table: 'master_secrets',
    pk: 'name',
    column: 'material',
    select: (db) => db('master_secrets').select(db.raw('name as pk'), 'material', 'name'),
    context: (r) => ({ tenantId: MASTER_SECRETS_SEAL_TENANT, kid: r.name as string, version: 1 }),
    sealedIn: ['shared/keys/sealed-items.ts'],
  },
  {
    // The AWS-style secret access keys of workloads: SigV4 needs the secret itself, so it is
    // sealed rather than hashed.
    name: 'access-keys',
    table: 'access_keys',
    pk: 'id',
    column: 'secret',
    select: (db) =>
      db('access_keys').select(db.raw('id as pk'), 'secret as material', 'id', 'tenant_id'),
    context: (r) => accessKeySealContext(r.tenant_id as string, r.id as string),
    sealedIn: ['api/services/auth/access-keys.ts'],
  },
];

/** SQL for the id a blob in `column` names; '' for a v1 blob (sealed before the keyring). */
export function sealedIdSql(column: string): string {
  return `(case when get_byte(${column}, 0) = 2 then convert_from(substring(${column} from 3 for get_byte(${column}, 1)), 'UTF8') else '' end)`;
}

/** Qualified column of a source's select (key_versions is aliased). */
function qualified(source: SealedSource): string {
  return source.table === 'key_versions' ? `kv.${source.column}` : source.column;
}

/** How many items each id seals ('' for v1 blobs), over every source present in the database. */
export async function countSealedById(db: Knex): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (const source of SEALED_SOURCES) {
    if (!(await db.schema.hasTable(source.table))) continue;
    const expr = sealedIdSql(source.column);
    const rows = (await db(source.table)
      .select(db.raw(`${expr} as id`))
      .count({ n: '*' })
      .groupByRaw(expr)) as Array<{ id: string; n: string | number }>;
    for (const r of rows) counts.set(r.id, (counts.get(r.id) ?? 0) + Number(r.n));
  }
  return counts;
}

/** One item of a source sealed under `id` ('' for v1), or undefined. */
async function sampleOf(
  db: Knex,
  source: SealedSource,
  id: string,
): Promise<Record<string, unknown> | undefined> {
  return source
    .select(db)
    .whereRaw(`${sealedIdSql(qualified(source))} = ?`, [id])
    .first();
}

/**
 * The start's check: every id the database's material names is in the keyring, and
 * one item of each id (and one v1 item, if any) opens. Run before the migrations and before
 * anything is served or written; throws a ConfigError naming the ids otherwise.
 */
export async function checkKeyring(db: Knex, master: MasterKey): Promise<void> {
  const missing = new Map<string, number>();
  const wrong = new Set<string>();
  for (const source of SEALED_SOURCES) {
    if (!(await db.schema.hasTable(source.table))) continue;
    const expr = sealedIdSql(source.column);
    const rows = (await db(source.table)
      .select(db.raw(`${expr} as id`))
      .count({ n: '*' })
      .groupByRaw(expr)) as Array<{ id: string; n: string | number }>;
    for (const { id, n } of rows) {
      if (id !== '' && !master.ids.includes(id)) {
        missing.set(id, (missing.get(id) ?? 0) + Number(n));
        continue;
      }
      const row = await sampleOf(db, source, id);
      if (!row) continue;
      try {
        master.open(row.material as Buffer, source.context(row)).fill(0);
      } catch (err) {
        if (!(err instanceof IntegrityError)) throw err;
        wrong.add(id === '' ? `(sealed before the keyring; tried ${master.ids.join(', ')})` : id);
      }
    }
  }
  if (missing.size === 0 && wrong.size === 0) return;
  const parts: string[] = [];
  if (missing.size > 0)
    parts.push(
      `ids still in use but not in the keyring: ${[...missing].map(([id, n]) => `${id} (${n} items)`).join(', ')}`,
    );
  if (wrong.size > 0)
    parts.push(`ids whose key does not open their material: ${[...wrong].join(', ')}`);
  throw new ConfigError(
    `KEYWARD_MASTER_KEY cannot open this database's key material (${parts.join('; ')}); the keyring holds ${master.ids.join(', ')}. Restore the keys the database was sealed under (KEYWARD_MASTER_KEY, or DATA_DIR/master.key when none was set), newest first`,
  );
}

/** The secrets once derived from the master key, stored sealed (migration 007). */
export type MasterSecretName = 'encryption-context' | 'client-secret-pepper';
const SECRET_NAMES: readonly MasterSecretName[] = ['encryption-context', 'client-secret-pepper'];

/** The sealed master secrets, opened. */
export interface MasterSecrets {
  get(name: MasterSecretName): Buffer;
}

/**
 * Opens the master secrets, creating any that is missing. A database from before the keyring
 * gets the value it always had (HMAC of the label under the key its material was sealed under,
 * so bound ciphertexts and workload secrets keep working); a new database gets the same
 * derivation under its newest key. Two instances starting together insert once (on conflict).
 */
export async function loadMasterSecrets(db: Knex, master: MasterKey): Promise<MasterSecrets> {
  const source = SEALED_SOURCES.find((s) => s.table === 'master_secrets')!;
  const have = new Set(
    ((await db('master_secrets').select('name')) as Array<{ name: string }>).map((r) => r.name),
  );
  const absent = SECRET_NAMES.filter((n) => !have.has(n));
  if (absent.length > 0) {
    const from = await legacyKeyId(db, master);
    for (const name of absent) {
      const value = master.derive(name, from);
      await db('master_secrets')
        .insert({ name, material: master.seal(value, source.context({ name })) })
        .onConflict('name')
        .ignore();
      value.fill(0);
    }
  }
  const values = new Map<string, Buffer>();
  for (const row of (await source.select(db)) as Array<Record<string, unknown>>)
    values.set(row.name as string, master.open(row.material as Buffer, source.context(row)));
  return {
    get(name) {
      const v = values.get(name);
      if (!v) throw new Error(`master secret ${name} is missing`);
      return v;
    },
  };
}

/** The key id the database's pre-keyring material opens under, else the newest id. */
async function legacyKeyId(db: Knex, master: MasterKey): Promise<string> {
  for (const source of SEALED_SOURCES) {
    const row = await sampleOf(db, source, '');
    if (row) return master.openWithId(row.material as Buffer, source.context(row)).id;
  }
  return master.newestId;
}
