/**
 * Detached JWE pieces (RFC 7516 JSON serialization, one recipient): key management of the fresh
 * content key for the target key (RFC 7518 section 4), the streaming content encryptors, and the
 * multipart/mixed framing of contract section 5.
 */
import { constants, createCipheriv, createDecipheriv, createHash, createHmac, createPublicKey, diffieHellman, generateKeyPairSync, publicEncrypt, randomBytes, randomUUID } from 'node:crypto';
import type { CipherGCM, Hmac, KeyObject } from 'node:crypto';
import { certificatePublicKey } from './certificates.ts';
import { cmsProblem, decryptionFailed } from './problems.ts';
import type { ResolvedKey } from './types.ts';
import { versionedKid } from '../crypto/jwe.ts';

export type JweEnc = 'A128GCM' | 'A192GCM' | 'A256GCM' | 'A128CBC-HS256' | 'A192CBC-HS384' | 'A256CBC-HS512';

/**
 * The per-recipient member of the JWE JSON serialization. Its `kid` names the key version,
 * `<kid>#<version>`, as the runtime JWE and the public JWKs do (contract 8).
 */
export interface JweRecipient {
  header: { alg: string; kid: string; epk?: Record<string, string> };
  encrypted_key: string;
}

const WRAP_CIPHER: Record<number, string> = { 16: 'id-aes128-wrap', 24: 'id-aes192-wrap', 32: 'id-aes256-wrap' };
const KW_BYTES: Record<string, number> = { A128KW: 16, A192KW: 24, A256KW: 32 };
const RFC3394_IV = Buffer.from('A6A6A6A6A6A6A6A6', 'hex');

function aesWrap(kek: Buffer, cek: Buffer): Buffer {
  const c = createCipheriv(WRAP_CIPHER[kek.length], kek, RFC3394_IV);
  return Buffer.concat([c.update(cek), c.final()]);
}

function lengthPrefixed(b: Buffer): Buffer {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(b.length);
  return Buffer.concat([len, b]);
}

/** Concat KDF of NIST SP 800-56A with SHA-256, as RFC 7518 section 4.6.2 profiles it (no apu/apv). */
export function concatKdf(z: Buffer, alg: string, keyBytes: number): Buffer {
  const supp = Buffer.alloc(4);
  supp.writeUInt32BE(keyBytes * 8);
  const otherInfo = Buffer.concat([lengthPrefixed(Buffer.from(alg, 'ascii')), lengthPrefixed(Buffer.alloc(0)), lengthPrefixed(Buffer.alloc(0)), supp]);
  const out: Buffer[] = [];
  for (let round = 1, have = 0; have < keyBytes; round++) {
    const ctr = Buffer.alloc(4);
    ctr.writeUInt32BE(round);
    const block = createHash('sha256').update(ctr).update(z).update(otherInfo).digest();
    out.push(block);
    have += block.length;
  }
  return Buffer.concat(out).subarray(0, keyBytes);
}

function publicKeyOf(key: ResolvedKey): KeyObject | null {
  if (key.publicKey) return key.publicKey;
  if (key.privateKey) return createPublicKey(key.privateKey);
  if (key.certificate) return certificatePublicKey(key.certificate);
  return null;
}

/** The default key management for a target key (contract section 5). */
export function defaultKeyManagement(key: ResolvedKey): string {
  if (key.secretKey) return `A${key.secretKey.symmetricKeySize! * 8}KW`;
  const type = publicKeyOf(key)?.asymmetricKeyType;
  if (type === 'rsa') return 'RSA-OAEP-256';
  if (type === 'ec') return 'ECDH-ES+A256KW';
  throw cmsProblem('cms_key_unusable', `key ${key.kid} cannot receive a JWE (it needs an RSA, EC or AES key)`);
}

/** Encrypts the fresh content key for the target key; `alg` defaults per defaultKeyManagement. */
export function wrapContentKey(target: ResolvedKey, cek: Buffer, alg = defaultKeyManagement(target)): JweRecipient {
  const unusable = () => cmsProblem('cms_key_unusable', `key ${target.kid} cannot be used with ${alg}`);
  if (alg === 'RSA-OAEP-256' || alg === 'RSA-OAEP') {
    const pub = publicKeyOf(target);
    if (pub?.asymmetricKeyType !== 'rsa') throw unusable();
    const ek = publicEncrypt({ key: pub, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: alg === 'RSA-OAEP' ? 'sha1' : 'sha256' }, cek);
    return { header: { alg, kid: versionedKid(target.kid, target.version) }, encrypted_key: ek.toString('base64url') };
  }
  const ecdh = /^ECDH-ES\+(A(?:128|192|256)KW)$/.exec(alg);
  if (ecdh) {
    const pub = publicKeyOf(target);
    if (pub?.asymmetricKeyType !== 'ec') throw unusable();
    const eph = generateKeyPairSync('ec', { namedCurve: pub.asymmetricKeyDetails!.namedCurve! });
    const z = diffieHellman({ privateKey: eph.privateKey, publicKey: pub });
    const kek = concatKdf(z, alg, KW_BYTES[ecdh[1]]);
    const { kty, crv, x, y } = eph.publicKey.export({ format: 'jwk' }) as Record<string, string>;
    return { header: { alg, kid: versionedKid(target.kid, target.version), epk: { kty, crv, x, y } }, encrypted_key: aesWrap(kek, cek).toString('base64url') };
  }
  if (KW_BYTES[alg]) {
    const kek = target.secretKey?.export();
    if (!kek || kek.length !== KW_BYTES[alg]) throw unusable();
    return { header: { alg, kid: versionedKid(target.kid, target.version) }, encrypted_key: aesWrap(kek, cek).toString('base64url') };
  }
  throw cmsProblem('cms_bad_metadata', `keyManagement ${alg} is not supported`);
}

/** The protected header, base64url-encoded; its ASCII is the AAD (RFC 7516 section 5.1 step 14). */
export function protectedHeader(enc: JweEnc): string {
  return Buffer.from(JSON.stringify({ enc })).toString('base64url');
}

/** Streaming content encryption under a fresh key; the tag only comes out of final(). */
export interface ContentEncryptor {
  readonly cek: Buffer;
  readonly iv: Buffer;
  update(chunk: Buffer): Buffer;
  /** Finishes; for CBC-HS pass-through this validates the CMS padding first. */
  final(): { rest: Buffer; tag: Buffer };
}

const GCM_BYTES: Record<string, number> = { A128GCM: 16, A192GCM: 24, A256GCM: 32 };

/** AES-GCM content encryption (RFC 7518 section 5.3) under a random key and 96-bit IV. */
export function gcmEncryptor(enc: JweEnc, aad: Buffer): ContentEncryptor {
  const bytes = GCM_BYTES[enc];
  const cek = randomBytes(bytes);
  const iv = randomBytes(12);
  const cipher = createCipheriv(`aes-${bytes * 8}-gcm`, cek, iv) as CipherGCM;
  cipher.setAAD(aad);
  return {
    cek,
    iv,
    update: (chunk) => cipher.update(chunk),
    final: () => ({ rest: cipher.final(), tag: cipher.getAuthTag() }),
  };
}

const CBC_HS: Record<number, { enc: JweEnc; hash: string }> = {
  16: { enc: 'A128CBC-HS256', hash: 'sha256' },
  24: { enc: 'A192CBC-HS384', hash: 'sha384' },
  32: { enc: 'A256CBC-HS512', hash: 'sha512' },
};

/** The AES_CBC_HMAC_SHA2 enc that preserves a CMS AES-CBC ciphertext with a key of that length. */
export function preservingEnc(keyBytes: number): JweEnc {
  return CBC_HS[keyBytes].enc;
}

/**
 * Keeps a CMS AES-CBC ciphertext byte for byte as AnCBC-HSm (RFC 7518 section 5.2.2): the JWE key
 * is a random MAC key followed by the CMS content key, the IV is the CMS IV, and the tag is the
 * first half of HMAC(MAC_KEY, AAD || IV || C || AL), computed as C streams by. Only the last
 * block is decrypted, to check the padding before the tag is given out.
 */
export function cbcPassThrough(cmsKey: Buffer, iv: Buffer, aad: Buffer): ContentEncryptor {
  const { hash } = CBC_HS[cmsKey.length];
  const macKey = randomBytes(cmsKey.length);
  const hmac: Hmac = createHmac(hash, macKey);
  hmac.update(aad).update(iv);
  let last = Buffer.alloc(0);
  let total = 0;
  return {
    cek: Buffer.concat([macKey, cmsKey]),
    iv,
    update(chunk) {
      hmac.update(chunk);
      total += chunk.length;
      last = chunk.length >= 32 ? Buffer.from(chunk.subarray(chunk.length - 32)) : Buffer.concat([last, chunk]).subarray(-32);
      return chunk;
    },
    final() {
      if (total === 0 || total % 16 !== 0) throw decryptionFailed(new Error('CBC ciphertext is not a whole number of blocks'));
      const prev = total >= 32 ? last.subarray(0, 16) : iv;
      const d = createDecipheriv(`aes-${cmsKey.length * 8}-cbc`, cmsKey, prev).setAutoPadding(false);
      const block = d.update(last.subarray(last.length - 16));
      const pad = block[15];
      let bad = pad === 0 || pad > 16 ? 1 : 0;
      for (let i = 16 - Math.min(Math.max(pad, 1), 16); i < 16; i++) bad |= block[i] ^ pad;
      if (bad) throw decryptionFailed(new Error('bad CBC padding'));
      const al = Buffer.alloc(8);
      al.writeBigUInt64BE(BigInt(aad.length) * 8n);
      return { rest: Buffer.alloc(0), tag: hmac.update(al).digest().subarray(0, cmsKey.length) };
    },
  };
}

/** multipart/mixed framing with the `----service-<UUID>` boundary and CRLF lines (contract section 5). */
export class Multipart {
  readonly boundary = `----service-${randomUUID()}`;
  #parts = 0;

  get contentType(): string {
    return `multipart/mixed; boundary="${this.boundary}"`;
  }

  /** The delimiter and headers that open the next part. */
  part(type: string): Buffer {
    const lead = this.#parts++ === 0 ? '' : '\r\n';
    return Buffer.from(`${lead}--${this.boundary}\r\nContent-Type: ${type}\r\n\r\n`, 'ascii');
  }

  /** The closing delimiter. */
  close(): Buffer {
    return Buffer.from(`\r\n--${this.boundary}--\r\n`, 'ascii');
  }
}
