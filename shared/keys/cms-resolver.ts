/**
 * The bridge between the CMS engine and the tenant's keys: finds imported keys by the CMS
 * identifiers (issuer and serial number, subject key identifier, KEK id) or by kid, through the
 * key cache. Only usable (active) keys are handed out; the tenant is fixed at construction. A key
 * by kid that the cache holds is answered from it alone (material and certificate); finding a
 * kid by a CMS identifier reads the database's identifier columns.
 */
import type { KeyPurpose, KeyResolver, ResolvedKey, CmsKeyRef } from '../pkcs7/types.ts';
import { AppError } from '../errors/index.ts';
import { KID, canonicalId } from '../ids.ts';
import { retainedVersion } from './lifecycle.ts';
import { issuerSerialKey, usableKey, type KeyLookupDeps } from './lookup.ts';
import { enabledUsagesSql } from './usages.ts';
import {
  decryptionNotAllowed,
  type DecryptingCaller,
  type DecryptionBudget,
  type DecryptionSource,
} from './decryption-budget.ts';

/** Who decrypts through a resolver, and the budget its failures count against. */
export interface ResolverDecryption {
  caller: DecryptingCaller;
  budget: DecryptionBudget;
  source: DecryptionSource;
}

/**
 * A resolver over one tenant's keys. `decryption` says who decrypts through it; without it the
 * resolver refuses every decryption (analyze, re-signing), so a caller that forgets it fails closed.
 */
export function tenantKeyResolver(
  deps: KeyLookupDeps,
  anyTenantId: string,
  decryption: ResolverDecryption | null,
): KeyResolver {
  const tenantId = canonicalId(anyTenantId);
  const { db } = deps;
  async function resolve(
    kid: string,
    purpose?: KeyPurpose,
    version?: number,
  ): Promise<ResolvedKey | null> {
    // A KEK id or a stored kid that no key can have names no key: not found, as for a missing one.
    if (!KID.test(kid)) return null;
    let key;
    try {
      // The one state and usage check of every key use: an encrypt key never signs.
      key = await usableKey(deps.keys, tenantId, kid, purpose);
    } catch (err) {
      if (err instanceof AppError && err.code === 'key_not_found') return null;
      throw err;
    }
    const v = version ?? key.currentVersion;
    // A version below the key's minDecryptionVersion no longer decrypts or verifies.
    if (key.versions.has(v)) retainedVersion(key, v);
    const loaded = key.versions.get(v);
    if (!loaded) return null;
    // The certificate comes with the cached key: a key the cache holds is answered without SQL.
    return {
      kid,
      version: v,
      type: key.type,
      privateKey: loaded.privateKey,
      publicKey: loaded.publicKey,
      secretKey: loaded.secretKey,
      ...(loaded.components ? { components: loaded.components } : {}),
      certificate: key.certificates.get(v),
    };
  }

  async function byRef(ref: CmsKeyRef, purpose?: KeyPurpose): Promise<ResolvedKey | null> {
    if (ref.kekId) {
      // KEK recipients name the key by bytes: the kid as text, else as hex.
      return (
        (await resolve(ref.kekId.toString('utf8'), purpose).catch(() => null)) ??
        resolve(ref.kekId.toString('hex'), purpose)
      );
    }
    let question: string;
    let column: 'v.issuer_serial' | 'v.subject_key_id';
    let value: string;
    if (ref.issuer && ref.serialNumber) {
      question = value = issuerSerialKey(ref.issuer, ref.serialNumber);
      column = 'v.issuer_serial';
    } else if (ref.subjectKeyIdentifier) {
      value = ref.subjectKeyIdentifier.toString('hex');
      question = `ski:${value}`;
      column = 'v.subject_key_id';
    } else return null;
    // Every message of a stream names the same few keys: the row is recalled a moment (the key
    // itself, its state and usages, are still checked by resolve, from the key cache), and the
    // query is only built when it is asked. A key the tenant does not hold is recalled too: a
    // mailbox's messages are also for people whose keys are elsewhere.
    const row = await deps.keys.recall(tenantId, `ref ${purpose ?? ''} ${question}`, async () => {
      const q = db('key_versions as v')
        .join('keys as k', 'k.id', 'v.key_id')
        .where('k.tenant_id', tenantId)
        .where(column, value);
      if (purpose) {
        // One key per certificate and usage: the key with the wanted usage enabled comes first,
        // and a key without it only when there is none, so resolve refuses it by name.
        q.orderByRaw(`case when ${enabledUsagesSql('k.')} @> ?::jsonb then 0 else 1 end`, [
          JSON.stringify([purpose]),
        ]);
        // A verify-only certificate never signs or decrypts; without a purpose it is the public
        // key that checks a signer.
        q.whereNot('k.usage', 'verify');
      }
      return (
        ((await q.orderBy('v.version', 'desc').orderBy('k.kid').first('k.kid', 'v.version')) as
          { kid: string; version: number } | undefined) ?? null
      );
    });
    return row ? resolve(row.kid, purpose, row.version) : null;
  }

  async function keyTypes(): Promise<string[]> {
    return (await db('keys').where({ tenant_id: tenantId, state: 'active' }).distinct('type')).map(
      (r) => r.type as string,
    );
  }

  async function archiveSigningKey(): Promise<ResolvedKey | null> {
    // Only a key's settings make it the archive signing key, and that change is announced.
    const kid = await deps.keys.recall(
      tenantId,
      'archive signing',
      async () =>
        (
          (await db('keys')
            .where({ tenant_id: tenantId, archive_signing: true, state: 'active' })
            .first('kid')) as { kid: string } | undefined
        )?.kid ?? null,
    );
    return kid ? resolve(kid, 'sign') : null;
  }

  async function trustAnchors(): Promise<Buffer[]> {
    const rows = await db('key_versions as v')
      .join('keys as k', 'k.id', 'v.key_id')
      .where({ 'k.tenant_id': tenantId, 'k.trust_anchor': true, 'k.state': 'active' })
      .whereRaw('v.version = k.current_version')
      .select('v.certificate_chain');
    return rows.flatMap((r) => {
      const chain = (
        typeof r.certificate_chain === 'string'
          ? JSON.parse(r.certificate_chain)
          : r.certificate_chain
      ) as string[] | null;
      return chain?.[0] ? [Buffer.from(chain[0], 'base64')] : [];
    });
  }

  return {
    byCmsRef: byRef,
    archiveSigningKey,
    trustAnchors,
    byKid: (kid, purpose, version) => resolve(kid, purpose, version),
    keyTypes,
    // Streaming decryptions reserve a point of the budget per kid (shared/keys/decryption-budget.ts).
    admitDecryption: async (kid) => {
      if (!decryption) throw decryptionNotAllowed();
      if (kid === undefined) return decryption.budget.admit(decryption.caller);
      await decryption.budget.reserve(decryption.caller, kid);
    },
    decryptionFailed: async (kid) =>
      decryption?.budget.failed(decryption.caller, kid, decryption.source, true),
    decryptionSucceeded: async (kid) => decryption?.budget.release(decryption.caller, kid),
  };
}
