/**
 * Keyward's ciphertext blob: a compact JWE as the bytes the protocols that want an opaque binary
 * ciphertext carry (the AWS KMS API's CiphertextBlob, the base64 of a Vault Transit
 * `vault:v<N>:<base64>`). It is versioned by its fourth byte:
 *
 *   `KWC` 0x02   the JWE's parts as bytes: the protected header's base64url text (u16 length),
 *                the encrypted key (u16 length), the IV (u8 length), the tag (u8 length), then
 *                the ciphertext to the end. Written by both APIs.
 *   `KWC` 0x01   the compact JWE's text. Read only, for blobs written before the binary form.
 *
 * The binary form drops the base64url of the JWE's bytes, so a blob is about three quarters of
 * the text form's size, and a protocol that base64-encodes it again carries base64 once, as
 * Vault's own ciphertexts do. Reading gives back the compact JWE, whose parser then checks it as
 * it checks every JWE: the header text must be canonical base64url, the key and version it names
 * must exist, and any byte changed fails the decryption.
 */

import type { JweParts } from './compact-jwe.ts';

const MAGIC = [0x4b, 0x57, 0x43] as const;
const TEXT_FORM = 0x01;
const BINARY_FORM = 0x02;

/** A JWE part to write: its base64url text (from a compact JWE), or its bytes (from the sealer). */
type Part = string | Buffer;

/** The byte length of a part (unpadded base64url text: three bytes per four characters). */
const lengthOf = (part: Part): number =>
  typeof part === 'string' ? Math.floor((part.length * 3) / 4) : part.length;

/** The binary form of a JWE's parts; the header is its base64url text, as the AAD is. */
function writeBlob(header: string, encryptedKey: Part, iv: Part, tag: Part, ciphertext: Part) {
  const ekLength = lengthOf(encryptedKey);
  const ivLength = lengthOf(iv);
  const tagLength = lengthOf(tag);
  if (header.length > 0xffff || ekLength > 0xffff || ivLength > 0xff || tagLength > 0xff)
    throw new Error('a JWE part is too long for the ciphertext blob');
  const size = 4 + 2 + header.length + 2 + ekLength + 1 + ivLength + 1 + tagLength;
  const out = Buffer.allocUnsafe(size + lengthOf(ciphertext));
  let at = 0;
  const put = (part: Part) =>
    (at += typeof part === 'string' ? out.write(part, at, 'base64url') : part.copy(out, at));
  out[0] = MAGIC[0];
  out[1] = MAGIC[1];
  out[2] = MAGIC[2];
  out[3] = BINARY_FORM;
  at = out.writeUInt16BE(header.length, 4);
  at += out.write(header, at, 'latin1');
  at = out.writeUInt16BE(ekLength, at);
  put(encryptedKey);
  out[at++] = ivLength;
  put(iv);
  out[at++] = tagLength;
  put(tag);
  put(ciphertext);
  if (at !== out.length) throw new Error('a JWE part is not base64url');
  return out;
}

/** The blob of a compact JWE (five parts, as this service's sealers write them). */
export function toBlob(jwe: string): Buffer {
  const parts = jwe.split('.');
  if (parts.length !== 5) throw new Error('a compact JWE has five parts');
  const [header, encryptedKey, iv, ciphertext, tag] = parts;
  return writeBlob(header, encryptedKey, iv, tag, ciphertext);
}

/** The blob of a JWE's parts straight from the sealer: no base64url pass over the ciphertext. */
export const blobOf = (p: JweParts): Buffer =>
  writeBlob(p.header, p.encryptedKey, p.iv, p.tag, p.ciphertext);

/** The base64 of a compact JWE's blob. */
export const blobBase64 = (jwe: string): string => toBlob(jwe).toString('base64');

/** The base64url header characters: the binary form holds the header's text, nothing else. */
const HEADER_TEXT = /^[A-Za-z0-9_-]+$/;

/**
 * The compact JWE of a blob of either form, or null when the bytes are no blob (a wrong magic,
 * a length past the end, a header that is not base64url text). The caller answers null as it
 * answers a JWE that fails to decrypt.
 */
export function fromBlob(bytes: Buffer): string | null {
  if (bytes.length <= 4 || bytes[0] !== MAGIC[0] || bytes[1] !== MAGIC[1] || bytes[2] !== MAGIC[2])
    return null;
  if (bytes[3] === TEXT_FORM) return bytes.toString('latin1', 4);
  if (bytes[3] !== BINARY_FORM) return null;
  let at = 4;
  /** The next `length` bytes, or null past the end (`length` -1 is a length that was not there). */
  const take = (length: number): Buffer | null => {
    if (length < 0 || at + length > bytes.length) return null;
    at += length;
    return bytes.subarray(at - length, at);
  };
  const u16 = () => (at + 2 <= bytes.length ? ((at += 2), bytes.readUInt16BE(at - 2)) : -1);
  const u8 = () => (at < bytes.length ? bytes[at++] : -1);
  const header = take(u16());
  if (header === null || header.length === 0) return null;
  const headerText = header.toString('latin1');
  if (!HEADER_TEXT.test(headerText)) return null;
  const encryptedKey = take(u16());
  const iv = encryptedKey && take(u8());
  const tag = iv && take(u8());
  if (tag === null) return null;
  const ciphertext = bytes.subarray(at);
  return `${headerText}.${encryptedKey!.toString('base64url')}.${iv!.toString('base64url')}.${ciphertext.toString('base64url')}.${tag.toString('base64url')}`;
}
