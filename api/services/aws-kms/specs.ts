/**
 * Keyward key types and usages in AWS KMS's words (KeySpec, KeyUsage, algorithm lists), one
 * table each way, so DescribeKey, GetPublicKey and CreateKey agree.
 */
import { keyTypeSpec, type KeyType, type KeyUsage } from '../../../shared/crypto/registry.ts';

/** AWS KeySpec → Keyward key type (a Map: KeySpec is request input, and a plain object would answer `constructor`). */
export const KEY_SPECS = new Map<unknown, KeyType>([
  ['SYMMETRIC_DEFAULT', 'aes-256'],
  ['HMAC_256', 'hmac-sha256'],
  ['HMAC_384', 'hmac-sha384'],
  ['HMAC_512', 'hmac-sha512'],
  ['RSA_2048', 'rsa-2048'],
  ['RSA_3072', 'rsa-3072'],
  ['RSA_4096', 'rsa-4096'],
  ['ECC_NIST_P256', 'ec-p256'],
  ['ECC_NIST_P384', 'ec-p384'],
  ['ECC_NIST_P521', 'ec-p521'],
  ['ECC_NIST_EDWARDS25519', 'ed25519'],
  ['ML_DSA_44', 'ml-dsa-44'],
  ['ML_DSA_65', 'ml-dsa-65'],
  ['ML_DSA_87', 'ml-dsa-87'],
]);

const SPEC_OF_TYPE = new Map<string, string>(
  [...KEY_SPECS].map(([spec, type]) => [type, spec as string]),
);
SPEC_OF_TYPE.set('aes-128', 'SYMMETRIC_DEFAULT');

/** The AWS KeySpec of a Keyward key type (the Keyward type upper-cased when AWS has none). */
export const awsKeySpec = (type: string): string =>
  SPEC_OF_TYPE.get(type) ?? type.toUpperCase().replace(/-/g, '_');

/** AWS KeyUsage → Keyward usage. */
export const KEY_USAGES = new Map<unknown, KeyUsage>([
  ['ENCRYPT_DECRYPT', 'encrypt'],
  ['SIGN_VERIFY', 'sign'],
  ['GENERATE_VERIFY_MAC', 'mac'],
]);

/** The AWS KeyUsage of a Keyward usage. */
export const awsKeyUsage = (usage: string): string =>
  usage === 'sign' ? 'SIGN_VERIFY' : usage === 'mac' ? 'GENERATE_VERIFY_MAC' : 'ENCRYPT_DECRYPT';

const JWS_TO_AWS = new Map<string, string>([
  ['RS256', 'RSASSA_PKCS1_V1_5_SHA_256'],
  ['RS384', 'RSASSA_PKCS1_V1_5_SHA_384'],
  ['RS512', 'RSASSA_PKCS1_V1_5_SHA_512'],
  ['PS256', 'RSASSA_PSS_SHA_256'],
  ['PS384', 'RSASSA_PSS_SHA_384'],
  ['PS512', 'RSASSA_PSS_SHA_512'],
  ['ES256', 'ECDSA_SHA_256'],
  ['ES384', 'ECDSA_SHA_384'],
  ['ES512', 'ECDSA_SHA_512'],
  ['EdDSA', 'ED25519_SHA_512'],
  ['Ed25519', 'ED25519_SHA_512'],
]);

/**
 * The AWS name of a JOSE signature algorithm for a key type (the JOSE name when AWS has none:
 * EdDSA by an Ed448 key is not ED25519_SHA_512).
 */
export const awsSigningAlgorithm = (jws: string, type?: string): string =>
  type === 'ed448' ? jws : (JWS_TO_AWS.get(jws) ?? jws);

/** The algorithm lists DescribeKey and GetPublicKey show for a key. */
export function algorithmsOf(type: string, usage: string): Record<string, string[]> {
  const spec = keyTypeSpec(type);
  if (usage === 'sign')
    return { SigningAlgorithms: (spec.jws ?? []).map((alg) => awsSigningAlgorithm(alg, type)) };
  if (usage === 'mac') return { MacAlgorithms: [`HMAC_SHA_${spec.bits}`] };
  if (spec.family === 'rsa') return { EncryptionAlgorithms: ['RSAES_OAEP_SHA_256'] };
  return { EncryptionAlgorithms: ['SYMMETRIC_DEFAULT'] };
}
