/**
 * What one conversion may spend on public-key checks. A SignedData chooses how many signers and
 * certificates it carries, and each certificate chooses its key: without a bound, one small file
 * (64 signers times 63 look-alike CAs with 3072-bit keys and huge exponents) held a core for
 * minutes. docs/migration.md ("What verification costs") describes the rules.
 */
import type { KeyObject } from 'node:crypto';
import { keyTypeOf } from '../keystore/entries.ts';
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

/**
 * Why a key from a certificate is refused before any check, or null: the rule a verify-only
 * certificate meets on import (shared/keystore/entries.ts keyTypeOf: RSA 2048/3072/4096 with an
 * odd exponent from 65537 to below 2^256, the NIST curves, Ed25519, Ed448), so a message cannot
 * bring a key the tenant could not have imported.
 */
export function certificateKeyFault(pub: KeyObject): string | null {
  try {
    keyTypeOf(pub, false);
    return null;
  } catch (err) {
    return (err as Error).message;
  }
}
