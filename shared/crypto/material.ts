/**
 * Key material: what a key version is made of, at rest (DER and raw bytes, see material-codec.ts)
 * and loaded (node KeyObjects, ready for the hot path). Private parts never leave this layer
 * except through serializeMaterial, whose output the lead encrypts under the master key.
 */
import {
  createPrivateKey,
  createPublicKey,
  createSecretKey,
  generateKeyPair,
  generateKeyPairSync,
  randomBytes,
} from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { promisify } from 'node:util';
import { problem, type AppError } from '../errors/index.ts';
import { assertUsage, keyTypeSpec } from './registry.ts';
import type { KeyType, KeyTypeSpec, KeyUsage } from './registry.ts';
import { hybridExpandSeed, hybridPublicKey } from './pqc.ts';
import { OPENSSL_CURVE } from './ecdh-es.ts';
import { asRsaKey, keySignatureAlgorithms } from './rsa-pss.ts';
import { hpkeSuiteOf } from '../jose/pq-identifiers.ts';
import type { KeyMaterial, KeyPairDer, LoadedKey, LoadedKeyVersion } from './key-material.ts';

export type { KeyMaterial, KeyPairDer, LoadedKey, LoadedKeyVersion } from './key-material.ts';

const DER = {
  publicKeyEncoding: { type: 'spki', format: 'der' },
  privateKeyEncoding: { type: 'pkcs8', format: 'der' },
} as const;
const generateKeyPairAsync = promisify(generateKeyPair);

function keyPairOptions(spec: KeyTypeSpec): Record<string, unknown> {
  if (spec.family === 'rsa') return { modulusLength: spec.bits, publicExponent: 0x10001, ...DER };
  if (spec.family === 'ec') return { namedCurve: spec.curve, ...DER };
  return { ...DER };
}

/** Generates a new key version; the asymmetric kinds run on libuv's thread pool, off the event loop. */
export async function generateKeyMaterial(type: KeyType): Promise<KeyMaterial> {
  const spec = keyTypeSpec(type);
  if (spec.symmetric || spec.family === 'hybrid') return generateKeyMaterialSync(type);
  // The overloads of generateKeyPair are per literal key type; the row's type is one of them.
  const generate = generateKeyPairAsync as unknown as (
    t: string,
    o: object,
  ) => Promise<{ publicKey: Buffer; privateKey: Buffer }>;
  const { publicKey, privateKey } = await generate(spec.nodeKeyType!, keyPairOptions(spec));
  return { type, privateKeyDer: privateKey, publicKeyDer: publicKey };
}

/** Generates a new key version on the calling thread (RSA-3072/4096 and SLH-DSA take tens to thousands of ms). */
export function generateKeyMaterialSync(type: KeyType): KeyMaterial {
  const spec = keyTypeSpec(type);
  if (spec.symmetric) return { type, secret: randomBytes(spec.bits / 8) };
  if (spec.family === 'hybrid') return hybridMaterialFromSeed(type, randomBytes(32));
  const generate = generateKeyPairSync as unknown as (
    t: string,
    o: object,
  ) => { publicKey: Buffer; privateKey: Buffer };
  const { publicKey, privateKey } = generate(spec.nodeKeyType!, keyPairOptions(spec));
  return { type, privateKeyDer: privateKey, publicKeyDer: publicKey };
}

/** The hybrid key whose decapsulation key is `seed` (expandDecapsulationKey of its hybrid KEM, pqc.ts). */
export function hybridMaterialFromSeed(type: KeyType, seed: Buffer): KeyMaterial {
  const { mlKem, group } = hybridExpandSeed(type, seed);
  const pair = (k: KeyObject): KeyPairDer => ({
    privateKeyDer: k.export({ type: 'pkcs8', format: 'der' }),
    publicKeyDer: createPublicKey(k).export({ type: 'spki', format: 'der' }),
  });
  return { type, secret: Buffer.from(seed), components: [pair(mlKem), pair(group)] };
}

function corrupt(type: string, why: string, cause?: unknown): AppError {
  return problem('internal', `key material of type ${type} is unusable: ${why}`, { cause });
}

function loadPair(
  type: string,
  pair: { privateKeyDer?: Buffer; publicKeyDer?: Buffer },
): { privateKey?: KeyObject; publicKey: KeyObject } {
  if (!pair.privateKeyDer && !pair.publicKeyDer) throw corrupt(type, 'no key bytes');
  try {
    const privateKey = pair.privateKeyDer
      ? createPrivateKey({ key: pair.privateKeyDer, format: 'der', type: 'pkcs8' })
      : undefined;
    const publicKey = pair.publicKeyDer
      ? createPublicKey({ key: pair.publicKeyDer, format: 'der', type: 'spki' })
      : createPublicKey(privateKey!);
    return { privateKey, publicKey };
  } catch (cause) {
    throw corrupt(type, 'DER does not parse', cause);
  }
}

const MIN_RSA_EXPONENT = 65537n;
const RSA_EXPONENT_LIMIT = 1n << 256n;

/**
 * What is wrong with an RSA key's public exponent, or null. FIPS 186-5 section A.1.1 and
 * SP 800-56B rev. 2 section 6.2: e is odd and 2^16 < e < 2^256. With e = 1 encryption is the
 * identity (the JWE's wrapped key is the OAEP block itself) and any message "verifies" against
 * a signature built from it; e = 3 is open to Coppersmith and Bleichenbacher-06 forgeries; an
 * even e has no inverse, so the key cannot decrypt what it encrypts.
 */
export function rsaExponentFault(key: KeyObject): string | null {
  if (key.asymmetricKeyType !== 'rsa' && key.asymmetricKeyType !== 'rsa-pss') return null;
  const e = key.asymmetricKeyDetails?.publicExponent;
  if (e === undefined) return 'the public exponent is missing';
  if (e % 2n === 0n) return `the public exponent ${e} is even`;
  if (e < MIN_RSA_EXPONENT) return `the public exponent ${e} is below 65537`;
  if (e >= RSA_EXPONENT_LIMIT)
    return `the public exponent has ${e.toString(2).length} bits, at least 2^256`;
  return null;
}

/** Refuses (keystore-key-invalid) an RSA key whose public exponent rsaExponentFault names. */
export function assertRsaExponent(key: KeyObject): void {
  const why = rsaExponentFault(key);
  if (why)
    throw problem(
      'keystore_key_invalid',
      `RSA key refused: ${why} (allowed: odd, 65537 <= e < 2^256)`,
    );
}

/**
 * Checks that a loaded asymmetric key is what the registry row says, so a mislabelled blob never
 * reaches the hot path, and that an RSA key's exponent is one that protects anything. Every
 * material passes here: imported (storeKey), exchanged (acceptance) and stored (the key cache).
 */
function checkShape(spec: KeyTypeSpec, key: KeyObject, expected: string | undefined): void {
  const details = key.asymmetricKeyDetails ?? {};
  const ok =
    key.asymmetricKeyType === expected &&
    (spec.family !== 'rsa' || details.modulusLength === spec.bits) &&
    ((spec.family !== 'ec' && expected !== 'ec') ||
      details.namedCurve === OPENSSL_CURVE[spec.curve!]);
  if (!ok) throw corrupt(spec.type, `holds a ${key.asymmetricKeyType} key`);
  assertRsaExponent(key);
}

/** Turns key material into KeyObjects; throws an internal problem when the bytes do not match the type. */
export function loadKeyObjects(m: KeyMaterial): LoadedKey {
  const spec = keyTypeSpec(m.type);
  if (spec.symmetric) {
    if (!m.secret || m.secret.length * 8 !== spec.bits)
      throw corrupt(m.type, 'wrong secret length');
    return Object.freeze({ type: m.type, spec, secretKey: createSecretKey(m.secret) });
  }
  if (spec.family === 'hybrid') {
    if (m.components?.length !== 2) throw corrupt(m.type, 'needs two components');
    const components = m.components.map((c) => Object.freeze(loadPair(m.type, c)));
    components.forEach((c, i) => checkShape(spec, c.publicKey, spec.components![i]));
    return Object.freeze({ type: m.type, spec, components: Object.freeze(components) });
  }
  const { privateKey, publicKey } = loadPair(m.type, m);
  checkShape(spec, publicKey, spec.nodeKeyType);
  if (privateKey) checkShape(spec, privateKey, spec.nodeKeyType);
  return Object.freeze({ type: m.type, spec, privateKey, publicKey });
}

/** Loads a key version for the hot path, checking that its type allows each usage enabled on it. */
export function loadKeyVersion(
  m: KeyMaterial,
  id: { kid: string; version: number; usage: KeyUsage; usages?: readonly KeyUsage[] },
): LoadedKeyVersion {
  if (!Number.isSafeInteger(id.version) || id.version < 1)
    throw problem('validation_failed', 'key version must be a positive integer');
  const loaded = loadKeyObjects(m);
  const usages = Object.freeze([...(id.usages ?? [id.usage])]);
  for (const u of usages) assertUsage({ type: m.type, usage: u, kid: id.kid }, u);
  return Object.freeze({ ...loaded, kid: id.kid, version: id.version, usage: id.usage, usages });
}

/** A public JWK (RFC 7517), with `kid`, `use` and the default `alg` when given a usage. */
export type PublicJwk = Record<string, string | string[]>;

/**
 * The `use` and default `alg` members of a key's JWK for its enabled usages. A JWK names one use
 * (RFC 7517 section 4.2): a key enabled for both signing and encryption carries neither member.
 */
export function jwkUseMembers(
  type: KeyType,
  usages: KeyUsage | readonly KeyUsage[],
  publicKey?: KeyObject,
): { use?: 'sig' | 'enc'; alg?: string } {
  const list = typeof usages === 'string' ? [usages] : usages;
  if (list.length !== 1) return {};
  const spec = keyTypeSpec(type);
  // A verify-only certificate checks signatures: `sig`, with no alg of its own.
  const signs = list[0] === 'sign' || list[0] === 'verify';
  // The key's own first algorithm when it is at hand: an RSASSA-PSS key bound to SHA-384 signs PS384.
  const sign = publicKey ? keySignatureAlgorithms(publicKey, spec.jws ?? [])[0] : spec.jws?.[0];
  const alg = list[0] === 'sign' ? sign : signs ? undefined : spec.jwe?.alg;
  return { use: signs ? 'sig' : 'enc', ...(alg !== undefined ? { alg } : {}) };
}

/**
 * The public key as a JWK. RSA/EC/OKP keys follow RFC 7518/8037; ML-DSA and SLH-DSA use the `AKP`
 * key type Node exports (RFC 9964: `alg` ML-DSA-44/65/87 and `pub` the raw key); ML-KEM and the
 * hybrids are `AKP` keys of their HPKE suite (draft-ietf-jose-hpke-pq-pqt: `alg` HPKE-12/13, and
 * HPKE-9/8/10 with `pub` = pk_M || pk_T, the hybrid's encapsulation key; shared/jose/pq-identifiers.ts).
 * Symmetric (AES, HMAC) keys have no public JWK.
 */
export function publicJwk(
  m: KeyMaterial | LoadedKey,
  opts: { kid?: string; usage?: KeyUsage | readonly KeyUsage[] } = {},
): PublicJwk {
  const loaded = 'spec' in m ? m : loadKeyObjects(m);
  const spec = loaded.spec;
  if (spec.symmetric)
    throw problem('key_usage_mismatch', `a ${spec.type} key is symmetric: it has no public key`);
  let jwk: PublicJwk;
  if (spec.family === 'hybrid') {
    // The `alg` is the hybrid's HPKE suite, set below.
    jwk = { kty: 'AKP', pub: hybridPublicKey(loaded).toString('base64url') };
  } else {
    // An id-RSASSA-PSS key is kty RSA in JOSE (RFC 7518 section 6.3); its `alg` says PS*.
    jwk = { ...(asRsaKey(loaded.publicKey!).export({ format: 'jwk' }) as PublicJwk) };
  }
  // ML-KEM and hybrid keys are published under the HPKE suite they receive.
  const hpke = hpkeSuiteOf(spec.type);
  if (hpke) jwk.alg = hpke.integrated;
  if (opts.kid !== undefined) jwk.kid = opts.kid;
  if (opts.usage !== undefined)
    Object.assign(jwk, jwkUseMembers(spec.type, opts.usage, loaded.publicKey));
  return jwk;
}

/**
 * The public key as PEM (SPKI, RFC 5280 section 4.1.2.7), or null for a hybrid, whose key
 * has no SPKI form Node can write (its JWK carries it). Symmetric keys answer key_usage_mismatch.
 */
export function publicPem(m: LoadedKey): string | null {
  if (m.spec.symmetric)
    throw problem('key_usage_mismatch', `a ${m.spec.type} key is symmetric: it has no public key`);
  if (!m.publicKey) return null;
  return m.publicKey.export({ type: 'spki', format: 'pem' }) as string;
}

export { deserializeMaterial, serializeMaterial } from './material-codec.ts';
