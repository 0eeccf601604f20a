/**
 * RSA signatures over a digest the caller computed (AWS KMS MessageType DIGEST). Node's
 * crypto.sign always hashes its input, so the encoding step is done here and the RSA private
 * operation stays in OpenSSL (blinded, constant time):
 *
 *   RS*: EMSA-PKCS1-v1_5 (RFC 8017 section 9.2): crypto.privateEncrypt with PKCS#1 type 1 padding over DigestInfo
 *   PS*: EMSA-PSS (RFC 8017 section 9.1) with MGF1 of the same hash and salt length = hash length
 *        (RFC 7518 section 3.5), then crypto.privateEncrypt without padding
 *
 * Verification runs the public operation without padding and checks the whole encoded message,
 * so no lenient padding parser stands between a forged signature and `true`.
 */
import {
  constants,
  createHash,
  privateEncrypt,
  publicDecrypt,
  randomBytes,
  timingSafeEqual,
} from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { asRsaKey } from './rsa-pss.ts';

/** The hashes a digest may have been made with: the AWS KMS ones, plus SHA-1, SHA-224 and SHA-3 that CMS signers use. */
export type DigestHash =
  'sha1' | 'sha224' | 'sha256' | 'sha384' | 'sha512' | 'sha3-256' | 'sha3-384' | 'sha3-512';

/** The DER prefix of DigestInfo for each hash (RFC 8017 section 9.2, note 1), parameters NULL. */
const DIGEST_INFO_PREFIX: Record<DigestHash, Buffer> = {
  sha1: Buffer.from('3021300906052b0e03021a05000414', 'hex'),
  sha224: Buffer.from('302d300d06096086480165030402040500041c', 'hex'),
  sha256: Buffer.from('3031300d060960864801650304020105000420', 'hex'),
  sha384: Buffer.from('3041300d060960864801650304020205000430', 'hex'),
  sha512: Buffer.from('3051300d060960864801650304020305000440', 'hex'),
  'sha3-256': Buffer.from('3031300d060960864801650304020805000420', 'hex'),
  'sha3-384': Buffer.from('3041300d060960864801650304020905000430', 'hex'),
  'sha3-512': Buffer.from('3051300d060960864801650304020a05000440', 'hex'),
};

/** Output length in bytes of each hash. */
export const HASH_LENGTH: Record<DigestHash, number> = {
  sha1: 20,
  sha224: 28,
  sha256: 32,
  sha384: 48,
  sha512: 64,
  'sha3-256': 32,
  'sha3-384': 48,
  'sha3-512': 64,
};

/** True for a Node hash name this module encodes. */
export function isDigestHash(hash: string): hash is DigestHash {
  return Object.hasOwn(HASH_LENGTH, hash);
}

function modulusBits(key: KeyObject): number {
  const bits = key.asymmetricKeyDetails?.modulusLength;
  if (!bits) throw new Error('not an RSA key');
  return bits;
}

/** The public RSA operation on a signature, or null when it is not an integer below the modulus. */
function openSignature(publicKey: KeyObject, signature: Buffer): Buffer | null {
  const k = Math.ceil(modulusBits(publicKey) / 8);
  if (signature.length !== k) return null;
  try {
    return publicDecrypt({ key: publicKey, padding: constants.RSA_NO_PADDING }, signature);
  } catch {
    return null;
  }
}

function pkcs1Encoded(hash: DigestHash, digest: Buffer, k: number): Buffer {
  const t = Buffer.concat([DIGEST_INFO_PREFIX[hash], digest]);
  const em = Buffer.alloc(k, 0xff);
  em[0] = 0x00;
  em[1] = 0x01;
  em[k - t.length - 1] = 0x00;
  t.copy(em, k - t.length);
  return em;
}

/** RSASSA-PKCS1-v1_5 signature over a precomputed digest. */
export function pkcs1SignDigest(privateKey: KeyObject, hash: DigestHash, digest: Buffer): Buffer {
  return privateEncrypt(
    { key: privateKey, padding: constants.RSA_PKCS1_PADDING },
    Buffer.concat([DIGEST_INFO_PREFIX[hash], digest]),
  );
}

/**
 * Checks an RSASSA-PKCS1-v1_5 signature against a precomputed digest by encoding and comparing
 * (RFC 8017 section 8.2.2 step 3), as OpenSSL does: a DigestInfo without its NULL parameters, or
 * with trailing bytes, does not verify.
 */
export function pkcs1VerifyDigest(
  publicKey: KeyObject,
  hash: DigestHash,
  digest: Buffer,
  signature: Buffer,
): boolean {
  if (digest.length !== HASH_LENGTH[hash]) return false;
  const em = openSignature(publicKey, signature);
  if (!em || em.length < DIGEST_INFO_PREFIX[hash].length + digest.length + 11) return false;
  return timingSafeEqual(em, pkcs1Encoded(hash, digest, em.length));
}

/** MGF1 (RFC 8017 appendix B.2.1). */
function mgf1(hash: DigestHash, seed: Buffer, length: number): Buffer {
  const blocks: Buffer[] = [];
  const counter = Buffer.alloc(4);
  for (let i = 0, have = 0; have < length; i++, have += HASH_LENGTH[hash]) {
    counter.writeUInt32BE(i, 0);
    blocks.push(createHash(hash).update(seed).update(counter).digest());
  }
  return Buffer.concat(blocks).subarray(0, length);
}

const ZERO8 = Buffer.alloc(8);

function pssHashOf(hash: DigestHash, digest: Buffer, salt: Buffer): Buffer {
  return createHash(hash).update(ZERO8).update(digest).update(salt).digest();
}

/** RSASSA-PSS signature over a precomputed digest, salt length = hash length. */
export function pssSignDigest(key: KeyObject, hash: DigestHash, digest: Buffer): Buffer {
  // OpenSSL runs no raw RSA on an id-RSASSA-PSS key; the encoding here is PSS all the same.
  const privateKey = asRsaKey(key);
  const modBits = modulusBits(privateKey);
  const k = Math.ceil(modBits / 8);
  const emBits = modBits - 1;
  const emLen = Math.ceil(emBits / 8);
  const hLen = HASH_LENGTH[hash];
  const salt = randomBytes(hLen);
  const h = pssHashOf(hash, digest, salt);
  const db = Buffer.alloc(emLen - hLen - 1);
  db[emLen - 2 * hLen - 2] = 0x01;
  salt.copy(db, emLen - 2 * hLen - 1);
  const mask = mgf1(hash, h, db.length);
  for (let i = 0; i < db.length; i++) db[i] ^= mask[i];
  db[0] &= 0xff >>> (8 * emLen - emBits);
  const em = Buffer.concat([Buffer.alloc(k - emLen), db, h, Buffer.from([0xbc])]);
  return privateEncrypt({ key: privateKey, padding: constants.RSA_NO_PADDING }, em);
}

/**
 * EMSA-PSS-VERIFY (RFC 8017 section 9.1.2) against a precomputed digest, MGF1 with the same hash;
 * the salt length is the hash length (JOSE PS*, RFC 7518 section 3.5) unless the caller names one
 * (CMS RSASSA-PSS-params, RFC 4056).
 */
export function pssVerifyDigest(
  key: KeyObject,
  hash: DigestHash,
  digest: Buffer,
  signature: Buffer,
  saltLength = HASH_LENGTH[hash],
): boolean {
  const hLen = HASH_LENGTH[hash];
  if (digest.length !== hLen || !Number.isInteger(saltLength) || saltLength < 0) return false;
  const publicKey = asRsaKey(key);
  const m = openSignature(publicKey, signature);
  if (!m) return false;
  const emBits = modulusBits(publicKey) - 1;
  const emLen = Math.ceil(emBits / 8);
  // Step 3: room for the hash, the salt and the two fixed bytes.
  if (emLen < hLen + saltLength + 2) return false;
  if (m.length > emLen && m[0] !== 0) return false;
  const em = m.subarray(m.length - emLen);
  const topMask = 0xff >>> (8 * emLen - emBits);
  if (em[emLen - 1] !== 0xbc || (em[0] & ~topMask) !== 0) return false;
  const h = em.subarray(emLen - hLen - 1, emLen - 1);
  const db = Buffer.from(em.subarray(0, emLen - hLen - 1));
  const mask = mgf1(hash, h, db.length);
  for (let i = 0; i < db.length; i++) db[i] ^= mask[i];
  db[0] &= topMask;
  const psLen = emLen - hLen - saltLength - 2;
  for (let i = 0; i < psLen; i++) if (db[i] !== 0) return false;
  if (db[psLen] !== 0x01) return false;
  return timingSafeEqual(h, pssHashOf(hash, digest, db.subarray(psLen + 1)));
}
