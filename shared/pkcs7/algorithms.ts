/** What the CMS engine does with each algorithm OID: digests, key agreement KDFs, key wraps, content ciphers. */
import { OID } from '../asn1/oids.ts';

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
