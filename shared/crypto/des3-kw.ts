/**
 * Triple-DES Key Wrap (RFC 3217 section 3, id-alg-CMS3DESwrap), the wrap `openssl cms -encrypt
 * -des3` uses for key agreement recipients and older mail clients use for KEK recipients. Only
 * unwrapping is needed (old archives are read, never written). OpenSSL does the two CBC passes,
 * the octet reversal and the CMS key checksum (the first 8 octets of SHA-1 of the key, compared
 * in constant time); the length rules are checked here first. RFC 3217 section 3.2 wraps a
 * 24-octet Triple-DES key into 40 octets; OpenSSL also wraps AES content keys this way
 * (`-aes256 -des3-wrap`) and reads them back, so 16 to 32 octet keys (32 to 48 wrapped) pass.
 */
import { createDecipheriv } from 'node:crypto';

/** The wrapped lengths taken: the key, an 8-octet checksum and an 8-octet IV, in 8-octet blocks. */
const MIN_WRAPPED = 32;
const MAX_WRAPPED = 48;
const KEK_BYTES = 24;

/** Unwraps a Triple-DES content key; throws when a length is wrong or the checksum fails. */
export function des3KeyUnwrap(kek: Buffer, wrapped: Buffer): Buffer {
  if (kek.length !== KEK_BYTES)
    throw new RangeError(`a Triple-DES key-encryption key has 24 bytes, not ${kek.length}`);
  if (wrapped.length < MIN_WRAPPED || wrapped.length > MAX_WRAPPED || wrapped.length % 8 !== 0)
    throw new RangeError(
      `a Triple-DES wrapped key has 32 to 48 bytes in 8-byte blocks, not ${wrapped.length}`,
    );
  // OpenSSL's des3-wrap takes its fixed IV (0x4adda22c79e82105) itself.
  const d = createDecipheriv('des3-wrap', kek, null);
  return Buffer.concat([d.update(wrapped), d.final()]);
}
