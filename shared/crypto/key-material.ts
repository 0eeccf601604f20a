/**
 * The shapes of key material, apart from the code that makes and loads it (material.ts), so that
 * the codec and the PQC module can name them without importing material.ts back.
 */
import type { KeyObject } from 'node:crypto';
import type { KeyType, KeyTypeSpec, KeyUsage } from './registry.ts';

/** A private key as PKCS#8 DER and its public key as SPKI DER. */
export interface KeyPairDer {
  privateKeyDer?: Buffer;
  publicKeyDer: Buffer;
}

/** The bytes of one key version. */
export interface KeyMaterial {
  type: KeyType;
  /** AES and HMAC: the key. Hybrid: the 32-byte seed the components were expanded from. */
  secret?: Buffer;
  /** PKCS#8 DER; absent for a public-only key. */
  privateKeyDer?: Buffer;
  /** SPKI DER. */
  publicKeyDer?: Buffer;
  /** Hybrid only: the component key pairs in the order of the registry row (ML-KEM-768, then X25519). */
  components?: KeyPairDer[];
}

/** Key material turned into KeyObjects, once per key version. */
export interface LoadedKey {
  readonly type: KeyType;
  readonly spec: KeyTypeSpec;
  readonly secretKey?: KeyObject;
  readonly privateKey?: KeyObject;
  readonly publicKey?: KeyObject;
  /** Hybrid only: the component keys in registry order. */
  readonly components?: readonly {
    readonly privateKey?: KeyObject;
    readonly publicKey: KeyObject;
  }[];
}

/** A loaded key with the identity the JWE header names and the usage the key was created for. */
export interface LoadedKeyVersion extends LoadedKey {
  readonly kid: string;
  readonly version: number;
  readonly usage: KeyUsage;
  /** The usages enabled on the key (shared/keys/usages.ts); `usage` is one of them. */
  readonly usages: readonly KeyUsage[];
}
