/** The key lookup the JOSE layer needs: a tenant key by the kid a header or request names. */
import type { KeyObject } from 'node:crypto';

/** A tenant key as the key store hands it to the JOSE layer and the CMS engine. */
export interface ResolvedKey {
  kid: string;
  version: number;
  /** 'rsa-2048' | 'ec-p256' | 'ed25519' | 'aes-256' ... */
  type: string;
  privateKey?: KeyObject;
  publicKey?: KeyObject;
  secretKey?: KeyObject;
  /** Hybrid keys: the ML-KEM and group (X25519, P-256, P-384) component keys, in the registry's order. */
  components?: readonly { readonly privateKey?: KeyObject; readonly publicKey: KeyObject }[];
  /** DER of the key's certificate, when it was imported with one. */
  certificate?: Buffer;
}

/** What a key is used for: 'sign' (JWS, CMS signers) or 'encrypt' (JWE, CMS recipients). */
export type KeyPurpose = 'sign' | 'encrypt';

/**
 * Finds a tenant's keys by kid; injected so the JOSE layer knows nothing of storage. Given a
 * purpose, the resolver refuses a key of another usage (key-usage-mismatch).
 */
export interface KidResolver {
  /** `version` names one retained version (a `<kid>#<version>` header); without it, the newest. */
  byKid(kid: string, purpose?: KeyPurpose, version?: number): Promise<ResolvedKey | null>;
  /**
   * The types ('rsa-2048', 'ec-p256'...) of the tenant's usable keys. When the re-signing key is
   * only named after the content, the signer hashes the content once per alg one of these types
   * can sign with, rather than once per alg there is.
   */
  keyTypes?(): Promise<readonly string[]>;
  /**
   * Admits one decryption of content: throws 403 when the caller may not
   * decrypt and, given the kid that will decrypt, 429 when the caller's decryption-failure budget
   * on it is spent. The engines call it before any byte is decrypted. Every resolver that serves
   * requests has it (shared/keys/cms-resolver.ts, and the thread-side port resolver forwards it);
   * a resolver without it (tests of the engines alone) admits everything.
   */
  admitDecryption?(kid?: string): Promise<void>;
  /**
   * Admitting with a kid reserves a point of the caller's budget; exactly one of these two ends
   * it: a failed decryption keeps the point (and counts in the metrics), a decryption that
   * succeeded (or was abandoned before its end) gives it back.
   */
  decryptionFailed?(kid: string): Promise<void>;
  decryptionSucceeded?(kid: string): Promise<void>;
}
