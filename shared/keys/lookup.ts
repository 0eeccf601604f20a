/**
 * Every way a tenant's key is found, in one place for the API and the worker: a usable key by kid for a use (the runtime path, through the cache), a key record by kid
 * (the control plane, from the database), the listing query, and the issuer+serial column that
 * CMS identifiers are looked up by. The tenant id is taken in its canonical form everywhere.
 */
import type { Knex } from 'knex';
import { problem } from '../errors/index.ts';
import { assertUsage, type KeyType, type KeyUsage } from '../crypto/registry.ts';
import { KID, canonicalId } from '../ids.ts';
import type { CachedKey, KeyCache } from './cache.ts';
import { keyNotFound, unusable, type KeyState } from './lifecycle.ts';

/** What a key lookup needs: the database for records and identifiers, the cache for loaded keys. */
export interface KeyLookupDeps {
  db: Knex;
  keys: KeyCache;
}

/**
 * A usable key of the tenant, named by a request member `kid`: 400 when the member cannot be a
 * kid, 404 when the tenant has no such key, 423/409 when it is not active, and 422
 * key-usage-mismatch when `usage` is given and the key is not for it (an encrypt key never signs).
 */
export async function usableKey(
  keys: KeyCache,
  tenantId: string,
  kid: unknown,
  usage?: KeyUsage,
): Promise<CachedKey> {
  if (typeof kid !== 'string' || !KID.test(kid))
    throw problem('validation_failed', 'kid must be 1 to 128 characters of A-Z a-z 0-9 . _ : -');
  const key = await keys.get(tenantId, kid);
  if (key.state !== 'active') throw unusable(kid, key.state, key.deletionAt);
  if (usage) assertUsage(key, usage);
  return key;
}

/** The database record of a tenant's key (control plane; the hot path uses the cache), or null. */
export async function findKeyRow(
  db: Knex,
  tenantId: string,
  kid: string,
): Promise<Record<string, unknown> | null> {
  return KID.test(kid)
    ? ((await db('keys')
        .where({ tenant_id: canonicalId(tenantId), kid })
        .first()) ?? null)
    : null;
}

/** As findKeyRow, with key-not-found for a missing key. */
export async function keyRow(
  db: Knex,
  tenantId: string,
  kid: string,
): Promise<Record<string, unknown>> {
  const row = await findKeyRow(db, tenantId, kid);
  if (!row) throw keyNotFound(kid);
  return row;
}

/** Which keys a listing shows: only these states, or every state but these; only these types. */
export interface KeyListFilter {
  states?: readonly KeyState[];
  exceptStates?: readonly KeyState[];
  types?: readonly KeyType[];
}

/** The query of a tenant's keys for a listing (each API pages or limits it as it documents). */
export function keysQuery(db: Knex, tenantId: string, filter: KeyListFilter = {}) {
  const q = db('keys').where({ tenant_id: canonicalId(tenantId) });
  if (filter.states) q.whereIn('state', [...filter.states]);
  if (filter.exceptStates) q.whereNotIn('state', [...filter.exceptStates]);
  if (filter.types) q.whereIn('type', [...filter.types]);
  return q;
}

/** The issuer+serial lookup column value of a certificate (RFC 5652 IssuerAndSerialNumber; leading zero octets of the serial dropped). */
export const issuerSerialKey = (issuerDer: Buffer, serial: Buffer): string =>
  `${issuerDer.toString('hex')}:${stripZeros(serial).toString('hex')}`;

function stripZeros(b: Buffer): Buffer {
  let i = 0;
  while (i < b.length - 1 && b[i] === 0) i += 1;
  return b.subarray(i);
}
