/**
 * What one conversion may spend on public-key checks. A SignedData chooses how many signers and
 * certificates it carries, and each certificate chooses its key: without a bound, one small file
 * (64 signers times 63 look-alike CAs with 3072-bit keys and huge exponents) held a core for
 * minutes. docs/migration.md ("What verification costs") describes the rules.
 */
import type { KeyObject } from 'node:crypto';
import { problem } from '../errors/index.ts';

/**
 * Most signature checks one conversion makes, signers and certificate links together: every
 * signer of a full SignerInfos set (64) plus as many links. A link checked once is not checked
 * again for the next signer under the same CA.
 */
export const MAX_SIGNATURE_CHECKS = 128;

/** Counts the signature checks of one conversion and refuses the one past the bound. */
export class SignatureBudget {
  readonly limit: number;
  #spent = 0;
  #links = new Map<string, boolean>();

  constructor(limit = MAX_SIGNATURE_CHECKS) {
    this.limit = limit;
  }

  /** Checks made so far. */
  get spent(): number {
    return this.#spent;
  }

  /** Takes one check; cms-unsupported (nothing converted) once the bound is reached. */
  spend(): void {
    if (this.#spent >= this.limit)
      throw problem(
        'cms_unsupported',
        `the SignedData needs more than ${this.limit} signature checks (its signers and their certificate links together); split it or carry fewer certificates`,
      );
    this.#spent++;
  }

  /** The outcome of a certificate link (`key`: the two certificates), checked at most once. */
  link(key: string, check: () => boolean): boolean {
    const known = this.#links.get(key);
    if (known !== undefined) return known;
    this.spend();
    const ok = check();
    this.#links.set(key, ok);
    return ok;
  }
}

/** RSA moduli an archived signature may be verified with: 1024 bits (old mail) to 8192. */
const VERIFY_RSA_BITS = { min: 1024, max: 8192 } as const;
/** Public exponents beyond this many bits make one verification a full exponentiation. */
const VERIFY_RSA_EXPONENT_BITS = 256;

/**
 * Why a key from a certificate is refused before any check, or null. The rule is about the cost of
 * a verification, which the file sets: an RSA modulus of at most 8192 bits and a public exponent of
 * at most 256 bits (a huge exponent turns each check into a full exponentiation), a DSA prime of at
 * most 3072 bits; elliptic curves cost what their size bounds. It is wider than the import's rule
 * for keys the tenant uses (RSA 2048 to 4096, exponent 65537 and up) on purpose: an archive holds
 * mail signed with RSA-1024 and brainpool keys years ago, and its signatures must still be
 * verified and recorded as they are. Below 1024 bits a verification proves nothing.
 */
export function certificateKeyFault(pub: KeyObject): string | null {
  const type = pub.asymmetricKeyType;
  const details = pub.asymmetricKeyDetails ?? {};
  if (type === 'rsa' || type === 'rsa-pss') {
    const bits = details.modulusLength ?? 0;
    if (bits < VERIFY_RSA_BITS.min || bits > VERIFY_RSA_BITS.max)
      return `an RSA key of ${bits} bits (verifiable: ${VERIFY_RSA_BITS.min} to ${VERIFY_RSA_BITS.max})`;
    const e = details.publicExponent;
    if (e === undefined || e < 3n || e % 2n === 0n)
      return `an RSA key whose public exponent is not an odd number of at least 3`;
    if (e.toString(2).length > VERIFY_RSA_EXPONENT_BITS)
      return `an RSA key whose public exponent has ${e.toString(2).length} bits (at most ${VERIFY_RSA_EXPONENT_BITS})`;
    return null;
  }
  if (type === 'dsa')
    return (details.modulusLength ?? 0) <= 3072 ? null : 'a DSA key of more than 3072 bits';
  if (type === 'ec' || type === 'ed25519' || type === 'ed448') return null;
  return `a ${type ?? 'unknown'} key, which no signature of a message uses`;
}
