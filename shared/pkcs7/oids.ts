/** Object identifiers the engine knows, with the names the analysis reports. */

export const OID = {
  data: '1.2.840.113549.1.7.1',
  signedData: '1.2.840.113549.1.7.2',
  envelopedData: '1.2.840.113549.1.7.3',
  signedAndEnvelopedData: '1.2.840.113549.1.7.4',
  digestedData: '1.2.840.113549.1.7.5',
  encryptedData: '1.2.840.113549.1.7.6',
  authenticatedData: '1.2.840.113549.1.9.16.1.2',
  authEnvelopedData: '1.2.840.113549.1.9.16.1.23',
  contentTypeAttr: '1.2.840.113549.1.9.3',
  messageDigestAttr: '1.2.840.113549.1.9.4',
  sha1: '1.3.14.3.2.26',
  sha256: '2.16.840.1.101.3.4.2.1',
  sha384: '2.16.840.1.101.3.4.2.2',
  sha512: '2.16.840.1.101.3.4.2.3',
  sha224: '2.16.840.1.101.3.4.2.4',
  rsaEncryption: '1.2.840.113549.1.1.1',
  sha1WithRSA: '1.2.840.113549.1.1.5',
  rsaesOaep: '1.2.840.113549.1.1.7',
  mgf1: '1.2.840.113549.1.1.8',
  pSpecified: '1.2.840.113549.1.1.9',
  rsassaPss: '1.2.840.113549.1.1.10',
  sha256WithRSA: '1.2.840.113549.1.1.11',
  sha384WithRSA: '1.2.840.113549.1.1.12',
  sha512WithRSA: '1.2.840.113549.1.1.13',
  ecPublicKey: '1.2.840.10045.2.1',
  ecdsaSha1: '1.2.840.10045.4.1',
  ecdsaSha256: '1.2.840.10045.4.3.2',
  ecdsaSha384: '1.2.840.10045.4.3.3',
  ecdsaSha512: '1.2.840.10045.4.3.4',
  ed25519: '1.3.101.112',
  p256: '1.2.840.10045.3.1.7',
  p384: '1.3.132.0.34',
  p521: '1.3.132.0.35',
  aes128Cbc: '2.16.840.1.101.3.4.1.2',
  aes192Cbc: '2.16.840.1.101.3.4.1.22',
  aes256Cbc: '2.16.840.1.101.3.4.1.42',
  aes128Gcm: '2.16.840.1.101.3.4.1.6',
  aes192Gcm: '2.16.840.1.101.3.4.1.26',
  aes256Gcm: '2.16.840.1.101.3.4.1.46',
  aes128Wrap: '2.16.840.1.101.3.4.1.5',
  aes192Wrap: '2.16.840.1.101.3.4.1.25',
  aes256Wrap: '2.16.840.1.101.3.4.1.45',
  desEde3Cbc: '1.2.840.113549.3.7',
  stdDhSha1Kdf: '1.3.133.16.840.63.0.2',
  stdDhSha224Kdf: '1.3.132.1.11.0',
  stdDhSha256Kdf: '1.3.132.1.11.1',
  stdDhSha384Kdf: '1.3.132.1.11.2',
  stdDhSha512Kdf: '1.3.132.1.11.3',
  cofactorDhSha1Kdf: '1.3.133.16.840.63.0.3',
  cofactorDhSha224Kdf: '1.3.132.1.14.0',
  cofactorDhSha256Kdf: '1.3.132.1.14.1',
  cofactorDhSha384Kdf: '1.3.132.1.14.2',
  cofactorDhSha512Kdf: '1.3.132.1.14.3',
  pwriKek: '1.2.840.113549.1.9.16.3.9',
} as const;

const NAMES: Record<string, string> = {
  [OID.data]: 'data',
  [OID.signedData]: 'signedData',
  [OID.envelopedData]: 'envelopedData',
  [OID.signedAndEnvelopedData]: 'signedAndEnvelopedData',
  [OID.digestedData]: 'digestedData',
  [OID.encryptedData]: 'encryptedData',
  [OID.authenticatedData]: 'authenticatedData',
  [OID.authEnvelopedData]: 'authEnvelopedData',
  [OID.sha1]: 'sha1',
  [OID.sha224]: 'sha224',
  [OID.sha256]: 'sha256',
  [OID.sha384]: 'sha384',
  [OID.sha512]: 'sha512',
  [OID.rsaEncryption]: 'rsaEncryption',
  [OID.sha1WithRSA]: 'sha1WithRSAEncryption',
  [OID.rsaesOaep]: 'RSAES-OAEP',
  [OID.rsassaPss]: 'RSASSA-PSS',
  [OID.sha256WithRSA]: 'sha256WithRSAEncryption',
  [OID.sha384WithRSA]: 'sha384WithRSAEncryption',
  [OID.sha512WithRSA]: 'sha512WithRSAEncryption',
  [OID.ecPublicKey]: 'ecPublicKey',
  [OID.ecdsaSha1]: 'ecdsa-with-SHA1',
  [OID.ecdsaSha256]: 'ecdsa-with-SHA256',
  [OID.ecdsaSha384]: 'ecdsa-with-SHA384',
  [OID.ecdsaSha512]: 'ecdsa-with-SHA512',
  [OID.ed25519]: 'Ed25519',
  [OID.aes128Cbc]: 'aes128-CBC',
  [OID.aes192Cbc]: 'aes192-CBC',
  [OID.aes256Cbc]: 'aes256-CBC',
  [OID.aes128Gcm]: 'aes128-GCM',
  [OID.aes192Gcm]: 'aes192-GCM',
  [OID.aes256Gcm]: 'aes256-GCM',
  [OID.aes128Wrap]: 'aes128-wrap',
  [OID.aes192Wrap]: 'aes192-wrap',
  [OID.aes256Wrap]: 'aes256-wrap',
  [OID.desEde3Cbc]: 'des-ede3-cbc',
  [OID.stdDhSha1Kdf]: 'dhSinglePass-stdDH-sha1kdf-scheme',
  [OID.stdDhSha224Kdf]: 'dhSinglePass-stdDH-sha224kdf-scheme',
  [OID.stdDhSha256Kdf]: 'dhSinglePass-stdDH-sha256kdf-scheme',
  [OID.stdDhSha384Kdf]: 'dhSinglePass-stdDH-sha384kdf-scheme',
  [OID.stdDhSha512Kdf]: 'dhSinglePass-stdDH-sha512kdf-scheme',
  [OID.cofactorDhSha1Kdf]: 'dhSinglePass-cofactorDH-sha1kdf-scheme',
  [OID.cofactorDhSha224Kdf]: 'dhSinglePass-cofactorDH-sha224kdf-scheme',
  [OID.cofactorDhSha256Kdf]: 'dhSinglePass-cofactorDH-sha256kdf-scheme',
  [OID.cofactorDhSha384Kdf]: 'dhSinglePass-cofactorDH-sha384kdf-scheme',
  [OID.cofactorDhSha512Kdf]: 'dhSinglePass-cofactorDH-sha512kdf-scheme',
  [OID.pwriKek]: 'PWRI-KEK',
};

/** The printable name of an OID, or the OID itself when unknown. */
export function oidName(oid: string): string {
  return NAMES[oid] ?? oid;
}

/** Node hash names of the digest algorithms CMS may declare. */
export const DIGESTS: Record<string, string> = {
  [OID.sha1]: 'sha1',
  [OID.sha224]: 'sha224',
  [OID.sha256]: 'sha256',
  [OID.sha384]: 'sha384',
  [OID.sha512]: 'sha512',
};

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

/** AES key wrap (RFC 3394) ciphers by OID: Node cipher name and KEK length. */
export const KEY_WRAPS: Record<string, { cipher: string; keyLength: number }> = {
  [OID.aes128Wrap]: { cipher: 'id-aes128-wrap', keyLength: 16 },
  [OID.aes192Wrap]: { cipher: 'id-aes192-wrap', keyLength: 24 },
  [OID.aes256Wrap]: { cipher: 'id-aes256-wrap', keyLength: 32 },
};

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
