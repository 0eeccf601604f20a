/**
 * What a key may do, declared once (docs/decisions.md, "Key usage from certificates"): a key
 * records the usages its certificate allows (`allowed_usages`; every usage its type has when
 * nothing restricts it) and the usages enabled now (`usages`, never empty, never past the allowed
 * ones). The `usage` column is the key's one usage for what can name only one (a JWK's `use`, AWS
 * KMS KeyUsage, listings): the type's default when it is enabled, else the first enabled.
 * assertUsage (shared/crypto/registry.ts) checks the enabled usages on every path that uses a key.
 */
import type { Knex } from 'knex';
import { problem } from '../errors/index.ts';
import { jwkUseMembers } from '../crypto/material.ts';
import { hpkeSuiteOf } from '../jose/pq-identifiers.ts';
import {
  keyTypeSpec,
  orderedUsages,
  primaryUsage,
  type KeyType,
  type KeyUsage,
} from '../crypto/registry.ts';

/** What a certificate's keyUsage/extendedKeyUsage allow (shared/keystore/certificate.ts); absent: unrestricted. */
type CertificateUsages = readonly ('sign' | 'encrypt')[] | undefined;

/**
 * The usages a keystore entry allows: without a private key, `encrypt` alone for a key that
 * receives HPKE (ML-KEM, X-Wing: a wrap-only recipient) and `verify` alone for any other, else
 * what the certificate allows that the type can do, or everything the type does (a certificate
 * without keyUsage/extendedKeyUsage, or none) except `mac`, which keys pairs never do.
 */
export function allowedUsages(
  type: KeyType,
  certificate: CertificateUsages,
  hasPrivateKey: boolean,
): KeyUsage[] {
  if (!hasPrivateKey) return hpkeSuiteOf(type) ? ['encrypt'] : ['verify'];
  const typeUsages = keyTypeSpec(type).usages.filter((u) => u !== 'mac');
  return orderedUsages(
    type,
    certificate === undefined
      ? typeUsages
      : typeUsages.filter((u) => (certificate as readonly string[]).includes(u)),
  );
}

/**
 * The SQL of a key row's enabled usages as a jsonb list; `p` is the table alias with its dot. A
 * null `usages` is the row's one `usage` (keys stored before migration 009, or restored from an
 * older backup), as enabledUsages reads it.
 */
export const enabledUsagesSql = (p = '') => `coalesce(${p}usages, jsonb_build_array(${p}usage))`;

/** Restricts a query of keys to those with `usage` enabled. */
export function whereUsageEnabled(q: Knex.QueryBuilder, usage: string, p = ''): void {
  q.whereRaw(`${enabledUsagesSql(p)} @> ?::jsonb`, [JSON.stringify([usage])]);
}

const USAGE_NAMES: ReadonlySet<string> = new Set(['encrypt', 'sign', 'mac', 'verify']);

/** A jsonb list as the driver hands it (parsed, or its text on some paths). */
function list(v: unknown): unknown {
  return typeof v === 'string' ? JSON.parse(v) : v;
}

/** A key row's enabled usages (its one `usage` for a row that records none). */
export function enabledUsages(row: Record<string, unknown>): KeyUsage[] {
  const v = list(row.usages);
  return Array.isArray(v) && v.length > 0 ? (v as KeyUsage[]) : [row.usage as KeyUsage];
}

/** A key row's allowed usages (its enabled ones for a row that records none). */
export function allowedUsagesOf(row: Record<string, unknown>): KeyUsage[] {
  const v = list(row.allowed_usages);
  return Array.isArray(v) && v.length > 0 ? (v as KeyUsage[]) : enabledUsages(row);
}

/**
 * A stored public JWK with the `use` and `alg` of the usages enabled now (a settings PATCH changes
 * them after the JWK was stored). A JWK whose `use` already fits is answered as stored, so an
 * `alg` that belongs to the key rather than to a usage (AKP keys: ML-DSA, HPKE) is never dropped.
 */
export function jwkForUsages(
  type: KeyType,
  usages: readonly KeyUsage[],
  jwk: Record<string, unknown>,
): Record<string, unknown> {
  // A JWK stored before ML-KEM and X-Wing keys were published under their HPKE suite (it said
  // ML-KEM-768 or X-Wing) is answered with the suite's label, as new keys are.
  const hpke = hpkeSuiteOf(type);
  const stored = hpke && jwk.alg !== hpke.integrated ? { ...jwk, alg: hpke.integrated } : jwk;
  const want = jwkUseMembers(type, usages);
  if (stored.use === want.use) return stored;
  const { use, ...rest } = stored;
  const was = use === 'sig' ? 'sign' : use === 'enc' ? 'encrypt' : undefined;
  if (was && rest.alg === jwkUseMembers(type, was).alg) delete rest.alg;
  return { ...rest, ...want };
}

/** The columns of a key whose enabled and allowed usages are these. */
export function usageColumns(
  type: KeyType,
  enabled: readonly KeyUsage[],
  allowed: readonly KeyUsage[],
): { usage: KeyUsage; usages: string; allowed_usages: string } {
  const on = orderedUsages(type, enabled);
  return {
    usage: primaryUsage(type, on),
    usages: JSON.stringify(on),
    allowed_usages: JSON.stringify(orderedUsages(type, allowed)),
  };
}

/**
 * Reads the `usages` member of a key settings PATCH against the key's allowed usages: a non-empty
 * list of distinct usage names (400 otherwise), each allowed (422 key-usage-mismatch naming the
 * allowed ones: what the certificate forbids is never enabled).
 */
export function readEnabledUsages(
  value: unknown,
  kid: string,
  allowed: readonly KeyUsage[],
): KeyUsage[] {
  if (
    !Array.isArray(value) ||
    value.length === 0 ||
    value.some((u) => typeof u !== 'string' || !USAGE_NAMES.has(u)) ||
    new Set(value).size !== value.length
  )
    throw problem(
      'validation_failed',
      'usages must be a non-empty list of distinct usages (encrypt, sign, mac, verify)',
      { details: { field: 'usages' } },
    );
  const beyond = (value as KeyUsage[]).filter((u) => !allowed.includes(u));
  if (beyond.length > 0)
    throw problem(
      'key_usage_mismatch',
      `key ${kid} allows only ${allowed.join(' and ')} (its certificate or type); it cannot ${beyond.join(' or ')}`,
      { details: { field: 'usages', allowed: [...allowed] } },
    );
  return value as KeyUsage[];
}

/**
 * 409 when another key of the tenant holds this certificate with one of these usages enabled,
 * naming that kid: one key per certificate and usage, so the CMS lookup by issuer and serial
 * finds one key for each purpose. `exceptKeyId` is the key being changed (a settings PATCH).
 */
export async function refuseDuplicate(
  trx: Knex,
  tenantId: string,
  issuerSerial: string | undefined,
  usages: readonly KeyUsage[],
  exceptKeyId?: string,
): Promise<void> {
  if (!issuerSerial) return;
  for (const usage of usages) {
    const q = trx('key_versions as v')
      .join('keys as k', 'k.id', 'v.key_id')
      .where({ 'k.tenant_id': tenantId, 'v.issuer_serial': issuerSerial });
    whereUsageEnabled(q, usage, 'k.');
    if (exceptKeyId) q.whereNot('k.id', exceptKeyId);
    const existing = await q.orderBy('k.kid').first('k.kid');
    if (existing)
      throw problem(
        'conflict',
        `this certificate is already imported for ${usage} as key ${existing.kid}`,
        { details: { kid: existing.kid, usage } },
      );
  }
}
