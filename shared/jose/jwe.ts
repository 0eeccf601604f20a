/**
 * Detached JWE pieces (RFC 7516 JSON serialization, one recipient): the protected header, the
 * streaming content encryptors, and the multipart/mixed framing of the conversion answer. The key
 * management of the content key is in keys.ts.
 */
import { createCipheriv, createDecipheriv, createHmac, randomBytes, randomUUID } from 'node:crypto';
import { asSecretKey } from '../crypto/secret-key.ts';
import type { CipherGCM, Hmac } from 'node:crypto';
import { decryptionFailed } from '../errors/index.ts';

export type JweEnc =
  'A128GCM' | 'A192GCM' | 'A256GCM' | 'A128CBC-HS256' | 'A192CBC-HS384' | 'A256CBC-HS512';

/** One content encryption: its key and tag bytes, the GCM of the same AES size, and for CBC-HS its parts. */
export interface EncSpec {
  cek: number;
  tag: number;
  gcm: JweEnc;
  cbc?: { bits: number; hash: string };
}

/**
 * The content encryptions the layer writes and reads (RFC 7518 sections 5.2 and 5.3), the one
 * table for the writer and the re-encrypter. Map: `enc` is sender input.
 */
export const ENCS: ReadonlyMap<string, EncSpec> = new Map<string, EncSpec>([
  ['A128GCM', { cek: 16, tag: 16, gcm: 'A128GCM' }],
  ['A192GCM', { cek: 24, tag: 16, gcm: 'A192GCM' }],
  ['A256GCM', { cek: 32, tag: 16, gcm: 'A256GCM' }],
  ['A128CBC-HS256', { cek: 32, tag: 16, gcm: 'A128GCM', cbc: { bits: 128, hash: 'sha256' } }],
  ['A192CBC-HS384', { cek: 48, tag: 24, gcm: 'A192GCM', cbc: { bits: 192, hash: 'sha384' } }],
  ['A256CBC-HS512', { cek: 64, tag: 32, gcm: 'A256GCM', cbc: { bits: 256, hash: 'sha512' } }],
]);

/**
 * The protected header, base64url-encoded; its ASCII is the AAD (RFC 7516 section 5.1 step 14).
 * `extra` members follow `enc` (the record of a deliberately mixed recipient list).
 */
export function protectedHeader(enc: JweEnc, extra?: Record<string, unknown>): string {
  return Buffer.from(JSON.stringify({ enc, ...extra })).toString('base64url');
}

/** Streaming content encryption under a fresh key; the tag only comes out of final(). */
export interface ContentEncryptor {
  readonly cek: Buffer;
  readonly iv: Buffer;
  update(chunk: Buffer): Buffer;
  /** Finishes; for CBC-HS pass-through this validates the CMS padding first. */
  final(): { rest: Buffer; tag: Buffer };
}

/** AES-GCM content encryption (RFC 7518 section 5.3) under a random key and 96-bit IV. */
export function gcmEncryptor(enc: JweEnc, aad: Buffer): ContentEncryptor {
  const bytes = ENCS.get(enc)!.cek;
  const cek = randomBytes(bytes);
  const iv = randomBytes(12);
  const cipher = createCipheriv(`aes-${bytes * 8}-gcm`, asSecretKey(cek), iv) as CipherGCM;
  cipher.setAAD(aad);
  return {
    cek,
    iv,
    update: (chunk) => cipher.update(chunk),
    final: () => ({ rest: cipher.final(), tag: cipher.getAuthTag() }),
  };
}

/** AnCBC-HSm by the length of the AES key it keeps (the second half of its content key). */
const CBC_HS = new Map(
  [...ENCS]
    .filter(([, e]) => e.cbc)
    .map(([enc, e]) => [e.cek / 2, { enc: enc as JweEnc, hash: e.cbc!.hash }]),
);

/** The AnCBC-HSm authentication tag computed as the ciphertext streams by. */
export interface CbcHsTag {
  update(ciphertext: Buffer): void;
  /** T = the first half of HMAC(MAC_KEY, A || IV || E || AL) (RFC 7518 section 5.2.2.1 steps 5 and 6). */
  tag(): Buffer;
}

/** The one computation of the AnCBC-HSm tag, for the writer and the re-encrypter; `macKey` is the first half of the content key. */
export function cbcHsTag(hash: string, macKey: Buffer, aad: Buffer, iv: Buffer): CbcHsTag {
  const hmac: Hmac = createHmac(hash, asSecretKey(macKey)).update(aad).update(iv);
  return {
    update: (ciphertext) => void hmac.update(ciphertext),
    tag() {
      // AL: the number of bits in A as a 64-bit big-endian integer.
      const al = Buffer.alloc(8);
      al.writeBigUInt64BE(BigInt(aad.length) * 8n);
      return hmac.update(al).digest().subarray(0, macKey.length);
    },
  };
}

/** The AES_CBC_HMAC_SHA2 enc that preserves a CMS AES-CBC ciphertext with a key of that length. */
export function preservingEnc(keyBytes: number): JweEnc {
  return CBC_HS.get(keyBytes)!.enc;
}

/**
 * Keeps a CMS AES-CBC ciphertext byte for byte as AnCBC-HSm (RFC 7518 section 5.2.2): the JWE key
 * is a random MAC key followed by the CMS content key, the IV is the CMS IV, and the tag is the
 * first half of HMAC(MAC_KEY, AAD || IV || C || AL), computed as C streams by. Only the last
 * block is decrypted, to check the padding before the tag is given out.
 */
export function cbcPassThrough(cmsKey: Buffer, iv: Buffer, aad: Buffer): ContentEncryptor {
  const { hash } = CBC_HS.get(cmsKey.length)!;
  const macKey = randomBytes(cmsKey.length);
  const mac = cbcHsTag(hash, macKey, aad, iv);
  let last = Buffer.alloc(0);
  let total = 0;
  return {
    cek: Buffer.concat([macKey, cmsKey]),
    iv,
    update(chunk) {
      mac.update(chunk);
      total += chunk.length;
      last =
        chunk.length >= 32
          ? Buffer.from(chunk.subarray(chunk.length - 32))
          : Buffer.concat([last, chunk]).subarray(-32);
      return chunk;
    },
    final() {
      if (total === 0 || total % 16 !== 0)
        throw decryptionFailed(new Error('CBC ciphertext is not a whole number of blocks'));
      const prev = total >= 32 ? last.subarray(0, 16) : iv;
      const d = createDecipheriv(
        `aes-${cmsKey.length * 8}-cbc`,
        asSecretKey(cmsKey),
        prev,
      ).setAutoPadding(false);
      const block = d.update(last.subarray(last.length - 16));
      const pad = block[15];
      let bad = pad === 0 || pad > 16 ? 1 : 0;
      for (let i = 16 - Math.min(Math.max(pad, 1), 16); i < 16; i++) bad |= block[i] ^ pad;
      if (bad) throw decryptionFailed(new Error('bad CBC padding'));
      return { rest: Buffer.alloc(0), tag: mac.tag() };
    },
  };
}

/** multipart/mixed framing with the `----service-<UUID>` boundary and CRLF lines. */
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
