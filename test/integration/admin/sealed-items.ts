/**
 * What the master-key tests share: the id every sealed item names, and a key given many
 * versions sealed under a chosen keyring entry, as the store seals them (a rewrap's load).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { createKeyring, sealedBy } from '../../../shared/crypto/master-key.ts';
import { SEALED_SOURCES } from '../../../shared/keys/sealed-items.ts';

/** Every sealed item with the id it names ('' for v1). */
export async function sealedIds(db: Knex): Promise<string[]> {
  const out: string[] = [];
  for (const s of SEALED_SOURCES)
    for (const row of (await s.select(db)) as Array<{ material: Buffer }>)
      out.push(sealedBy(row.material) ?? '');
  return out;
}

/** Adds `n` versions to a key, sealed under `id:key` as the store would (rewrap load). */
export async function addVersions(
  db: Knex,
  tenantId: string,
  kid: string,
  n: number,
  id: string,
  key: string,
) {
  const keyring = createKeyring([{ id, key: Buffer.from(key, 'base64') }]);
  const row = await db('keys').where({ tenant_id: tenantId, kid }).first();
  const rows = [];
  for (let v = 1000; v < 1000 + n; v++)
    rows.push({
      id: randomUUID(),
      key_id: row.id,
      version: v,
      material: keyring.seal(randomBytes(32), { tenantId, kid, version: v }),
    });
  for (let i = 0; i < rows.length; i += 500)
    await db('key_versions').insert(rows.slice(i, i + 500));
}
