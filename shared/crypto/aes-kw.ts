/**
 * AES Key Wrap (RFC 3394) with its default initial value, the one copy the JOSE layer (A*KW,
 * ECDH-ES+A*KW, RFC 7518 sections 4.4 and 4.6) and the CMS engine (KEKRecipientInfo and key
 * agreement, RFC 3565/5753) use. OpenSSL does the wrapping and the integrity check; the lengths
 * OpenSSL lets through without one (an empty input unwraps to nothing) are refused here first.
 */
import { createCipheriv, createDecipheriv } from 'node:crypto';
import { asSecretKey } from './secret-key.ts';

const IV = Buffer.from('a6a6a6a6a6a6a6a6', 'hex');
const KEK_BYTES = new Set([16, 24, 32]);

function cipherName(kek: Buffer): `id-aes${number}-wrap` {
  if (!KEK_BYTES.has(kek.length))
    throw new RangeError(`an AES key-encryption key has 16, 24 or 32 bytes, not ${kek.length}`);
  return `id-aes${kek.length * 8}-wrap`;
}

/** RFC 3394 section 2.2.1: the key data is at least two 64-bit blocks. */
function checkBlocks(n: number, min: number, what: string): void {
  if (n < min || n % 8 !== 0)
    throw new RangeError(
      `${what} of ${n} bytes is not a whole number of 64-bit blocks, at least ${min / 8}`,
    );
}

/** Wraps a key (16 bytes or more, a multiple of 8) under `kek`. */
export function aesKeyWrap(kek: Buffer, key: Buffer): Buffer {
  const name = cipherName(kek);
  checkBlocks(key.length, 16, 'key data');
  const c = createCipheriv(name, asSecretKey(kek), IV);
  return Buffer.concat([c.update(key), c.final()]);
}

/** Unwraps a key; throws when the lengths are wrong or the integrity check (section 2.2.3) fails. */
export function aesKeyUnwrap(kek: Buffer, wrapped: Buffer): Buffer {
  const name = cipherName(kek);
  checkBlocks(wrapped.length, 24, 'wrapped key');
  const d = createDecipheriv(name, asSecretKey(kek), IV);
  return Buffer.concat([d.update(wrapped), d.final()]);
}
