/**
 * Transit's value formats: `vault:v<N>:<base64>` for ciphertexts, signatures and HMACs, as
 * Vault writes them (clients split on ':' into three parts and read the version from the second).
 * A ciphertext's base64 is Keyward's own ciphertext blob, the one the AWS KMS API carries
 * (shared/jose/ciphertext-blob.ts): the compact JWE whose protected header names
 * `<kid>#<version>` and binds the context digest, so it opens only under the tenant and key that
 * made it (docs/vault-transit.md).
 */
import { decodeBase64 } from '../../../shared/base64.ts';
import { parseCompact } from '../../../shared/jose/compact-jwe.ts';
import { fromBlob } from '../../../shared/jose/ciphertext-blob.ts';
import { invalidCiphertext, invalidRequest } from './errors.ts';

/** A ciphertext's bound: the native API's largest compact JWE, as base64 of the blob. */
const MAX_VALUE_CHARS = 300_000;
const VALUE = /^vault:v([1-9][0-9]{0,8}):([A-Za-z0-9+/]*={0,2})$/;

/** `vault:v<version>:<base64 of bytes>`. */
export const prefixed = (version: number, bytes: Buffer): string =>
  `vault:v${version}:${bytes.toString('base64')}`;

/** A sealed ciphertext blob (its base64, as seal writes it for `blob`) as a Transit ciphertext. */
export const toCiphertext = (version: number, blob: string): string => `vault:v${version}:${blob}`;

/**
 * The compact JWE of a Transit ciphertext made for `kid`: its prefix, magic, key and version must
 * agree, else the one invalid-ciphertext answer, whatever was wrong.
 */
export function fromCiphertext(value: unknown, kid: string): string {
  if (typeof value !== 'string' || value.length > MAX_VALUE_CHARS) throw invalidCiphertext();
  const m = VALUE.exec(value);
  const bytes = m ? decodeBase64(m[2], 'standard') : undefined;
  const jwe = bytes ? fromBlob(bytes) : null;
  if (!m || jwe === null) throw invalidCiphertext();
  let named: { kid: string; version: number };
  try {
    named = parseCompact(jwe);
  } catch {
    throw invalidCiphertext();
  }
  if (named.kid !== kid || named.version !== Number(m[1])) throw invalidCiphertext();
  return jwe;
}

/** The version and bytes of a signature or HMAC value; 400 naming the field otherwise. */
export function fromPrefixed(value: unknown, field: string): { version: number; bytes: Buffer } {
  const m = typeof value === 'string' && value.length <= MAX_VALUE_CHARS ? VALUE.exec(value) : null;
  const bytes = m ? decodeBase64(m[2], 'standard') : undefined;
  if (!m || !bytes || bytes.length === 0)
    throw invalidRequest(`invalid ${field}: expected vault:v<version>:<base64>`);
  return { version: Number(m[1]), bytes };
}
