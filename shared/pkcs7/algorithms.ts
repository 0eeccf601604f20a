/** What the CMS engine does with each algorithm OID: digests, key agreement KDFs, key wraps, content ciphers. */
import { createHash } from 'node:crypto';
import type { Hash } from 'node:crypto';
import { DIGESTS, OID } from '../asn1/oids.ts';

/** X9.63 KDF hash of each ECDH key agreement scheme (RFC 5753 section 7.1.4). */
export const ECDH_KDF: Record<string, string> = {
  [OID.stdDhSha1Kdf]: 'sha1',
  [OID.stdDhSha224Kdf]: 'sha224',
  [OID.stdDhSha256Kdf]: 'sha256',
  [OID.stdDhSha384Kdf]: 'sha384',
  [OID.stdDhSha512Kdf]: 'sha512',
  [OID.cofactorDhSha1Kdf]: 'sha1',
  [OID.cofactorDhSha224Kdf]: 'sha224',
  [OID.cofactorDhSha256Kdf]: 'sha256',
  [OID.cofactorDhSha384Kdf]: 'sha384',
  [OID.cofactorDhSha512Kdf]: 'sha512',
};

/**
 * Key wraps by OID, with the KEK length each names: AES key wrap (RFC 3394, OIDs of RFC 3565)
 * and Triple-DES key wrap (RFC 3217). A Map, as the OID comes from the message.
 */
export const KEY_WRAPS: ReadonlyMap<string, { keyLength: number; kind: 'aes' | '3des' }> = new Map([
  [OID.aes128Wrap, { keyLength: 16, kind: 'aes' }],
  [OID.aes192Wrap, { keyLength: 24, kind: 'aes' }],
  [OID.aes256Wrap, { keyLength: 32, kind: 'aes' }],
  [OID.cms3DesWrap, { keyLength: 24, kind: '3des' }],
] as const);

/** Content-encryption algorithms the engine decrypts. */
export interface ContentCipherSpec {
  cipher: string;
  keyLength: number;
  mode: 'cbc' | 'gcm';
  /** AES key size in bits, 0 for 3DES. */
  aesBits: number;
}

export const CONTENT_CIPHERS: Record<string, ContentCipherSpec> = {
  [OID.aes128Cbc]: { cipher: 'aes-128-cbc', keyLength: 16, mode: 'cbc', aesBits: 128 },
  [OID.aes192Cbc]: { cipher: 'aes-192-cbc', keyLength: 24, mode: 'cbc', aesBits: 192 },
  [OID.aes256Cbc]: { cipher: 'aes-256-cbc', keyLength: 32, mode: 'cbc', aesBits: 256 },
  [OID.desEde3Cbc]: { cipher: 'des-ede3-cbc', keyLength: 24, mode: 'cbc', aesBits: 0 },
  [OID.aes128Gcm]: { cipher: 'aes-128-gcm', keyLength: 16, mode: 'gcm', aesBits: 128 },
  [OID.aes192Gcm]: { cipher: 'aes-192-gcm', keyLength: 24, mode: 'gcm', aesBits: 192 },
  [OID.aes256Gcm]: { cipher: 'aes-256-gcm', keyLength: 32, mode: 'gcm', aesBits: 256 },
};

/**
 * Digest algorithms of CMS signers by OID: Node's hash name and output bytes. The PKCS#12 and
 * OAEP ones (DIGESTS) plus SHA3-256/384/512 (RFC 9688) and SHAKE256 at 512 bits, Ed448's digest
 * (RFC 8419 section 3; id-shake256 of RFC 8702 or id-shake256-len with 512, see cmsDigestFault).
 * A Map, as the OID comes from the message.
 */
export const CMS_DIGESTS: ReadonlyMap<string, { hash: string; bytes: number }> = new Map([
  ...Object.entries(DIGESTS).map(
    ([oid, hash]) => [oid, { hash, bytes: createHash(hash).digest().length }] as const,
  ),
  [OID.sha3_256, { hash: 'sha3-256', bytes: 32 }],
  [OID.sha3_384, { hash: 'sha3-384', bytes: 48 }],
  [OID.sha3_512, { hash: 'sha3-512', bytes: 64 }],
  [OID.shake256, { hash: 'shake256', bytes: 64 }],
  [OID.shake256Len, { hash: 'shake256', bytes: 64 }],
]);

/** The Node hash name of a CMS digest OID, or undefined for one the engine does not compute. */
export function cmsDigestName(oid: string): string | undefined {
  return CMS_DIGESTS.get(oid)?.hash;
}

/** A running hash for a CMS digest OID the table knows (SHAKE256 with its 64-byte output). */
export function createCmsHash(oid: string): Hash {
  const d = CMS_DIGESTS.get(oid)!;
  return createHash(d.hash, d.hash === 'shake256' ? { outputLength: d.bytes } : undefined);
}

/** id-shake256-len's ShakeOutputLen, INTEGER 512, DER (RFC 8419 section 2.3). */
const SHAKE256_LEN_512 = Buffer.from('02020200', 'hex');

/**
 * Why a digest AlgorithmIdentifier's parameters are refused, or null: id-shake256-len must say
 * 512 bits (the only length RFC 8419 allows), id-shake256 carries none (RFC 8702 section 3.1).
 */
export function cmsDigestFault(
  oid: string,
  parameters: ArrayBuffer | null | undefined,
): string | null {
  const p = parameters ? Buffer.from(parameters) : null;
  if (oid === OID.shake256Len && !p?.equals(SHAKE256_LEN_512))
    return 'digest algorithm SHAKE256 with an output length other than 512 bits';
  if (oid === OID.shake256 && p && p.length > 0 && !p.equals(Buffer.from('0500', 'hex')))
    return 'digest algorithm SHAKE256 with parameters';
  return null;
}
