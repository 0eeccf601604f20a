/**
 * RSASSA-PSS keys (id-RSASSA-PSS in the SubjectPublicKeyInfo or PKCS#8, RFC 4055 section 1.2):
 * what their RSASSA-PSS-params let them sign in JOSE, and the same key numbers as a plain RSA key
 * for what OpenSSL refuses an id-RSASSA-PSS key (the raw RSA operation of the over-digest
 * primitives, and JWK export).
 */
import { createPrivateKey, createPublicKey } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { walk } from '../asn1/der.ts';
import type { SignatureAlgorithm } from './registry.ts';

/** JOSE PS* by the hash a PSS key's parameters name (RFC 7518 section 3.5). */
const PS_OF_HASH = new Map<string, SignatureAlgorithm>([
  ['sha256', 'PS256'],
  ['sha384', 'PS384'],
  ['sha512', 'PS512'],
]);
const HASH_BYTES: Record<string, number> = { sha256: 32, sha384: 48, sha512: 64 };

/**
 * Why an id-RSASSA-PSS key cannot sign any JOSE PS* (RFC 7518 section 3.5: MGF1 over the
 * signature hash, salt as long as that hash), or null. OpenSSL enforces the key's parameters
 * (the hash, and the salt length as a minimum), so a key restricted otherwise could never sign.
 */
export function pssJoseFault(key: KeyObject): string | null {
  if (key.asymmetricKeyType !== 'rsa-pss') return null;
  const d = key.asymmetricKeyDetails ?? {};
  if (d.hashAlgorithm === undefined) return null;
  if (!PS_OF_HASH.has(d.hashAlgorithm))
    return `an RSASSA-PSS key restricted to hash ${d.hashAlgorithm}`;
  if (d.mgf1HashAlgorithm !== undefined && d.mgf1HashAlgorithm !== d.hashAlgorithm)
    return `an RSASSA-PSS key with MGF1 over ${d.mgf1HashAlgorithm} and hash ${d.hashAlgorithm}`;
  if (d.saltLength !== undefined && d.saltLength > HASH_BYTES[d.hashAlgorithm])
    return `an RSASSA-PSS key that needs a salt of at least ${d.saltLength} bytes`;
  return null;
}

/**
 * The JWS algorithms a key can sign with out of those its type allows: an id-RSASSA-PSS key whose
 * parameters name a hash signs only the PS* of that hash; every other key, all of them.
 */
export function keySignatureAlgorithms(
  key: KeyObject | undefined,
  allowed: readonly SignatureAlgorithm[],
): readonly SignatureAlgorithm[] {
  const hash =
    key?.asymmetricKeyType === 'rsa-pss' ? key.asymmetricKeyDetails?.hashAlgorithm : undefined;
  if (hash === undefined) return allowed;
  const only = PS_OF_HASH.get(hash);
  return allowed.filter((alg) => alg === only);
}

/** The inner RSAPublicKey or RSAPrivateKey DER of an SPKI or PKCS#8 encoding. */
function innerRsaKey(der: Buffer, kind: 'spki' | 'pkcs8'): Buffer {
  const outer = walk(der);
  const parts = outer?.length === 1 ? walk(der, outer[0].valueStart, outer[0].end) : null;
  const n = kind === 'spki' ? parts?.[1] : parts?.[2];
  if (!n || n.tag !== (kind === 'spki' ? 0x03 : 0x04)) throw new Error(`not an RSA ${kind} key`);
  // A BIT STRING's first value byte counts the unused bits (zero for a key).
  return der.subarray(kind === 'spki' ? n.valueStart + 1 : n.valueStart, n.end);
}

/**
 * The same key as a plain RSA (rsaEncryption) KeyObject; any other key as it is. Only for the
 * operations that check the PSS encoding themselves (rsa-digest.ts) and for the public JWK
 * (RFC 7518 section 6.3 has no PSS-only key type).
 */
export function asRsaKey(key: KeyObject): KeyObject {
  if (key.asymmetricKeyType !== 'rsa-pss') return key;
  if (key.type === 'private')
    return createPrivateKey({
      key: innerRsaKey(key.export({ type: 'pkcs8', format: 'der' }), 'pkcs8'),
      format: 'der',
      type: 'pkcs1',
    });
  return createPublicKey({
    key: innerRsaKey(key.export({ type: 'spki', format: 'der' }), 'spki'),
    format: 'der',
    type: 'pkcs1',
  });
}
