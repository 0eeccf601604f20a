/**
 * Keystore import: PKCS#12 or PEM parsed in the worker pool (a small unencrypted PEM
 * on the event loop), then every key of it stored in one transaction, so a failure leaves no
 * half-imported key.
 */
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { AppContext } from '../../context.ts';
import { errorFromData, problem } from '../../../shared/errors/index.ts';
import {
  primaryUsage,
  resolveUsage,
  type KeyType,
  type KeyUsage,
} from '../../../shared/crypto/registry.ts';
import { allowedUsages, refuseDuplicate } from '../../../shared/keys/usages.ts';
import { WORK_COSTS } from '../../../shared/keys/work-budget.ts';
import { parseKeystoreTask, type ParsedKeystoreEntry } from '../../threads/tasks/keystore.ts';
import { tenantPolicy } from '../policies.ts';
import { KID, storeKey } from './store.ts';
import { issuerSerialKey } from '../../../shared/keys/lookup.ts';
import { akpJwkOf, akpKeyFromJwk } from '../../../shared/jose/akp-jwk.ts';
import type { KeyView } from '../../schemas/keys.ts';

const b = (u?: Uint8Array) => (u ? Buffer.from(u.buffer, u.byteOffset, u.byteLength) : undefined);

/**
 * The usages of the key an entry imports as: `allowed`, what the certificate's keyUsage/
 * extendedKeyUsage allow (RFC 5280 sections 4.2.1.3 and 4.2.1.12) that the type can do, or all
 * the type can do when the certificate restricts nothing (shared/keys/usages.ts); `enabled`, all
 * of them, or the one a `usage` field names (which the certificate must allow).
 */
export function importUsages(
  e: Pick<ParsedKeystoreEntry, 'type' | 'usages' | 'privateKeyDer'>,
  requested?: string,
): { enabled: KeyUsage[]; allowed: KeyUsage[] } {
  const type = e.type as KeyType;
  const allowed = allowedUsages(type, e.usages, !!e.privateKeyDer);
  // A key without its private part does its one public thing (verify, or encrypt to a KEM key),
  // whatever a certificate allows.
  if (!e.privateKeyDer) {
    if (requested !== undefined && requested !== allowed[0])
      throw problem(
        'key_usage_mismatch',
        `a key imported without its private key can only ${allowed[0]}; it cannot ${requested}`,
        { details: { allowed } },
      );
    return { enabled: allowed, allowed };
  }
  if (requested !== undefined) {
    const usage = resolveUsage(type, requested);
    // HMAC keys are generated, never imported: a keystore holds key pairs. The types a
    // keystore yields refuse `mac` in resolveUsage already; this also narrows the type.
    if (usage === 'mac')
      throw problem(
        'key_usage_mismatch',
        'mac keys are generated (an hmac-* key type), not imported',
        { details: { allowed: ['encrypt', 'sign'] } },
      );
    if (!allowed.includes(usage)) {
      throw problem(
        'key_usage_mismatch',
        `the certificate's keyUsage/extendedKeyUsage do not allow ${usage}`,
        { details: { allowed } },
      );
    }
    return { enabled: [usage], allowed };
  }
  if (e.usages?.length === 0)
    throw problem(
      'key_usage_mismatch',
      "the certificate's keyUsage allows neither signing nor encryption (only certificate or CRL signing, for instance)",
      { details: { allowed: [] } },
    );
  if (allowed.length === 0) {
    throw problem(
      'key_usage_mismatch',
      `the certificate's keyUsage/extendedKeyUsage allow only ${e.usages!.join(' and ')}, which a ${type} key cannot do`,
      { details: { allowed: e.usages } },
    );
  }
  return { enabled: allowed, allowed };
}

/** The value of the first `type` attribute of an RFC 4514 name string, unescaped; null without one. */
function attribute(name: string, type: string): string | null {
  const m = new RegExp(`(?:^|[,+])${type}=((?:\\\\.|[^,+\\\\])*)`).exec(name);
  return m ? m[1].replace(/\\(.)/g, '$1') : null;
}

/**
 * A kid from a certificate's subject: its common name, else its e-mail address, in the kid's
 * characters (others become `-`, accents are dropped) and at most 100 of them, so `-2`, `-3`
 * can follow; null when the subject has neither. A kid a person recognises (`alice-example.com`)
 * beats `imported-<uuid>` in every list, log line and console view.
 */
export function kidFromSubject(subject: string | undefined): string | null {
  if (!subject) return null;
  const name = attribute(subject, 'CN') ?? attribute(subject, 'emailAddress');
  if (!name) return null;
  const safe = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/[^A-Za-z0-9._:-]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 100);
  return safe === '' ? null : safe;
}

/** `base`, else `base-2`, `base-3`, ...: the first no key of the tenant (nor of this import) has. */
async function freeKid(trx: Knex, tenantId: string, base: string, taken: Set<string>) {
  const rows = await trx('keys')
    .where({ tenant_id: tenantId })
    .andWhere((q) =>
      q.where('kid', base).orWhere('kid', 'like', `${base.replace(/[\\%_]/g, '\\$&')}-%`),
    )
    .pluck('kid');
  const used = new Set<string>([...rows, ...taken]);
  for (let n = 1; ; n++) {
    const kid = n === 1 ? base : `${base}-${n}`;
    if (!used.has(kid)) return kid;
  }
}

/**
 * The largest PEM parsed on the event loop. An unencrypted PEM key and its chain are a few KiB and
 * parse in well under a millisecond, with no key derivation to run; sending them to the pool
 * started a thread for it, about 25 MB of the API's RSS for the pool's idle timeout.
 * A PKCS#12 file, an encrypted PEM (PBKDF2) or a larger bundle still goes to the pool.
 */
const LOOP_PEM_BYTES = 64 * 1024;

function parseOnLoop(data: Buffer, password: string | undefined): boolean {
  if (password !== undefined || data.length > LOOP_PEM_BYTES) return false;
  const text = data.toString('latin1');
  return text.includes('-----BEGIN ') && !text.includes('ENCRYPTED');
}

/**
 * Parses the keystore where its cost belongs; the pool's failures arrive as plain data either way.
 * A file's PKCS#12 KDF or PBKDF2 iteration counts (and an encrypted PEM's scrypt cost) are the
 * caller's to choose, so the parse is expensive work (docs/expensive-work.md): on the
 * expensive-work pool, not the crypto pool that signs for every tenant, charged the most a
 * parse may cost to the caller's budget first, and given back what it did not use.
 */
async function parseEntries(
  ctx: AppContext,
  input: { data: Buffer; password?: string },
  principal: string,
): Promise<ParsedKeystoreEntry[]> {
  if (!parseOnLoop(input.data, input.password)) {
    const charged = WORK_COSTS.keystoreMax;
    const parsed = await ctx.expensive.run<{
      entries?: ParsedKeystoreEntry[];
      error?: unknown;
      ms: number;
    }>('parseKeystoreCosted', input, { principal, kind: 'key-derivation', cost: charged });
    const unused = charged - Math.max(1, Math.ceil(parsed.ms));
    if (principal && unused > 0) await ctx.expensive.budget.refund(principal, unused);
    if (parsed.error !== undefined) throw errorFromData(parsed.error);
    return parsed.entries!;
  }
  try {
    return parseKeystoreTask(input);
  } catch (err) {
    throw errorFromData(err);
  }
}

/** Imports every key of a keystore; answers the keys with their certificate summaries. */
export async function importKeystore(
  ctx: AppContext,
  tenantId: string,
  input: { data: Buffer; password?: string; kid?: string; usage?: string; trustAnchor?: boolean },
  /** The audit actor whose budget of expensive work the parse spends (none for system work). */
  principal = '',
): Promise<Array<KeyView & { certificate: unknown }>> {
  // The kid rule of generated keys applies to imported ones too; checked before the costly parse.
  if (input.kid !== undefined && !KID.test(input.kid))
    throw problem('validation_failed', 'kid must be 1 to 128 characters of A-Z a-z 0-9 . _ : -');
  // An ML-DSA or HPKE key as an AKP JWK is read here: no key derivation, no chain. Its entry
  // carries the type and whether it has a private part; the material to store is the JWK's own.
  const akp = akpJwkOf(input.data);
  const fromJwk = akp ? akpKeyFromJwk(akp) : null;
  const entries: ParsedKeystoreEntry[] = fromJwk
    ? [
        {
          type: fromJwk.type,
          publicKeyDer: new Uint8Array(0),
          ...(fromJwk.hasPrivateKey ? { privateKeyDer: new Uint8Array(0) } : {}),
          certificates: [],
        },
      ]
    : await parseEntries(ctx, { data: input.data, password: input.password }, principal);
  if (entries.length === 0) throw problem('keystore_empty', 'the keystore holds no private key');
  if (input.trustAnchor && entries.some((e) => e.privateKeyDer))
    throw problem(
      'validation_failed',
      'trustAnchor marks certificates imported without a private key (verify-only keys)',
      { details: { field: 'trustAnchor' } },
    );
  if (input.kid && entries.length > 1)
    throw problem(
      'validation_failed',
      `the keystore holds ${entries.length} keys; a single kid cannot name them all`,
    );
  const { effective } = await tenantPolicy(ctx, tenantId);
  const plan = entries.map((e) => {
    if (!effective.allowedKeyTypes.includes(e.type))
      throw problem(
        'policy_violation',
        `the effective policy of this tenant does not allow ${e.type} keys`,
      );
    return { e, ...importUsages(e, input.usage) };
  });
  return ctx.db.transaction(async (trx) => {
    const out: Array<KeyView & { certificate: unknown }> = [];
    const named = new Set<string>();
    for (const { e, enabled, allowed } of plan) {
      const issuerDer = b(e.issuerDer);
      const serialNumber = b(e.serialNumber);
      await refuseDuplicate(
        trx,
        tenantId,
        issuerDer && serialNumber ? issuerSerialKey(issuerDer, serialNumber) : undefined,
        enabled,
      );
      // Without a kid, the certificate names the key (subject CN or e-mail), made unique.
      // Without a kid, a JWK's own kid names the key when it is one the tenant's kids allow.
      const jwkKid = fromJwk?.kid !== undefined && KID.test(fromJwk.kid) ? fromJwk.kid : null;
      const base =
        input.kid === undefined ? (kidFromSubject(e.certificate?.subject) ?? jwkKid) : null;
      const kid =
        input.kid ??
        (base ? await freeKid(trx, tenantId, base, named) : `imported-${randomUUID()}`);
      named.add(kid);
      const view = await storeKey(
        ctx,
        tenantId,
        {
          kid,
          type: e.type,
          usage: primaryUsage(e.type as KeyType, enabled),
          usages: enabled,
          allowedUsages: allowed,
          source: 'imported',
          trustAnchor: enabled.includes('verify') && input.trustAnchor === true,
        },
        fromJwk?.material ?? {
          type: e.type as KeyType,
          privateKeyDer: b(e.privateKeyDer),
          publicKeyDer: b(e.publicKeyDer),
        },
        {
          certificateChain: e.certificates.map((c) => b(c)!),
          issuerDer,
          serialNumber,
          subjectKeyIdentifier: b(e.subjectKeyIdentifier),
        },
        trx,
      );
      out.push({ ...view, certificate: e.certificate ?? null });
    }
    return out;
  });
}
