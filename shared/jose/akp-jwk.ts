/**
 * A key given as an `AKP` JWK, read into the key material a key import stores. `alg` names what
 * the key is: an ML-DSA parameter set (RFC 9964 section 3: `pub` the raw public key, `priv` the
 * 32-byte seed), or an HPKE suite of draft-ietf-jose-hpke-pq-pqt, Integrated or Key Encryption
 * alike (`pub` is SerializePublicKey, `priv` SerializePrivateKey: the ML-KEM seed d || z, or the
 * 32-byte X-Wing seed). The `alg` is looked up in the label tables of pq-identifiers.ts, so a
 * suite added there imports without more code here. A `priv` must give the `pub` beside it, and
 * nothing but the members of an AKP JWK is read: a JWK with others is refused, not half-read.
 */
import { createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';
import { problem } from '../errors/index.ts';
import { keyTypeSpec, type KeyType } from '../crypto/registry.ts';
import type { KeyMaterial, KeyPairDer } from '../crypto/key-material.ts';
import { hybridMaterialFromSeed, publicJwk } from '../crypto/material.ts';
import { HPKE_SUITES, hpkeAlg, ML_DSA_ALGS, PQ_MEMBERS } from './pq-identifiers.ts';

export interface AkpKey {
  /** The key type of the registry: `ml-dsa-65`, `ml-kem-768`, `x25519-ml-kem-768`, ... */
  type: KeyType;
  /** What storeKey stores; without a private part for a public JWK. */
  material: KeyMaterial;
  /** False for a public JWK: a verify-only (ML-DSA) or encrypt-only (HPKE) key. */
  hasPrivateKey: boolean;
  /** The JWK's own `kid`, when it has one. */
  kid?: string;
}

/** The members an AKP JWK may have; anything else (a `d`, `x`, `k`, ...) is refused. */
const AKP_MEMBERS: ReadonlySet<string> = new Set([
  'kty',
  'alg',
  'pub',
  'priv',
  'kid',
  'use',
  'key_ops',
  'ext',
]);

/** The raw public key length of each component a hybrid key type concatenates into `pub`. */
const RAW_PUBLIC_LENGTH: Readonly<Record<string, number>> = {
  'ml-kem-768': 1184,
  'ml-kem-1024': 1568,
  x25519: 32,
};

/** The uncompressed SEC1 point's length of a hybrid's curve component. */
const POINT_LENGTH: Readonly<Record<string, number>> = { 'P-256': 65, 'P-384': 97 };

/** The JWK in `data` when it is a JSON object of `kty` AKP; undefined for anything else. */
export function akpJwkOf(data: Buffer): Record<string, unknown> | undefined {
  const text = data.toString('utf8').trim();
  if (!text.startsWith('{')) return undefined;
  try {
    const v = JSON.parse(text) as unknown;
    return v && typeof v === 'object' && (v as { kty?: unknown }).kty === PQ_MEMBERS.akp.label
      ? (v as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/** The `alg` values an AKP JWK imports under: the ML-DSA sets and every HPKE suite label. */
export function akpImportAlgs(): string[] {
  return [
    ...ML_DSA_ALGS.keys(),
    ...[...HPKE_SUITES.values()].flatMap((s) => [s.integrated, s.keyEncryption]),
  ];
}

const bad = (what: string, cause?: unknown) =>
  problem('keystore_malformed', `the AKP JWK ${what}`, { cause });

/** base64url without padding, as JWK members are; anything else is not decoded leniently. */
function bytesOf(value: unknown, member: string): Buffer {
  if (typeof value !== 'string' || !/^[A-Za-z0-9_-]+$/.test(value))
    throw bad(`${member} must be base64url without padding`);
  return Buffer.from(value, 'base64url');
}

const spki = (k: KeyObject) => k.export({ format: 'der', type: 'spki' });
const pkcs8 = (k: KeyObject) => k.export({ format: 'der', type: 'pkcs8' });

function rawPublicKey(bytes: Buffer, type: string, alg: string, curve?: string): KeyObject {
  // A curve half is the uncompressed point the hybrid writes, never another encoding.
  if (curve !== undefined && bytes[0] !== 0x04) throw bad(`pub is not an ${alg} public key`);
  try {
    return createPublicKey({
      key: bytes,
      format: 'raw-public',
      asymmetricKeyType: type,
      ...(curve !== undefined ? { namedCurve: curve } : {}),
    } as never);
  } catch (cause) {
    throw bad(`pub is not an ${alg} public key`, cause);
  }
}

/** The public-only material of `pub` for a key type: one key, or a hybrid's components in order. */
function publicMaterial(type: KeyType, pub: Buffer, alg: string): KeyMaterial {
  const spec = keyTypeSpec(type);
  if (spec.family !== 'hybrid')
    return { type, publicKeyDer: spki(rawPublicKey(pub, spec.nodeKeyType!, alg)) };
  const curve = spec.curve;
  const lengths = spec.components!.map((c) =>
    c === 'ec' && curve !== undefined ? POINT_LENGTH[curve] : RAW_PUBLIC_LENGTH[c],
  );
  if (lengths.some((n) => n === undefined))
    throw problem(
      'keystore_unsupported_algorithm',
      `a public ${alg} AKP JWK does not import yet: give its priv`,
    );
  if (pub.length !== lengths.reduce((a, b) => a + b, 0))
    throw bad(`pub is not an ${alg} public key (${pub.length} bytes)`);
  let at = 0;
  const components: KeyPairDer[] = spec.components!.map((c, i) => {
    const part = pub.subarray(at, (at += lengths[i]));
    return { publicKeyDer: spki(rawPublicKey(part, c, alg, c === 'ec' ? curve : undefined)) };
  });
  return { type, components };
}

/** The material a seed gives for a key type: the hybrid's expansion, else the key's own seed form. */
function privateMaterial(type: KeyType, seed: Buffer, alg: string): KeyMaterial {
  try {
    if (keyTypeSpec(type).family === 'hybrid') return hybridMaterialFromSeed(type, seed);
    const privateKey = createPrivateKey({
      key: seed,
      format: 'raw-seed',
      asymmetricKeyType: keyTypeSpec(type).nodeKeyType!,
    } as never);
    return {
      type,
      privateKeyDer: pkcs8(privateKey),
      publicKeyDer: spki(createPublicKey(privateKey)),
    };
  } catch (cause) {
    throw bad(`priv is not an ${alg} seed (${seed.length} bytes)`, cause);
  }
}

/**
 * Reads an AKP JWK of an ML-DSA or HPKE `alg` into key material; any other `alg`, a member an AKP
 * JWK does not have, or a `priv` whose public key is not the `pub` is keystore-malformed.
 */
export function akpKeyFromJwk(jwk: Record<string, unknown>): AkpKey {
  const alg = typeof jwk.alg === 'string' ? jwk.alg : '';
  const hpke = hpkeAlg(alg);
  const type = (ML_DSA_ALGS.has(alg) ? alg.toLowerCase() : hpke?.type) as KeyType | undefined;
  if (jwk.kty !== PQ_MEMBERS.akp.label || type === undefined || jwk.pub === undefined)
    throw problem(
      'keystore_malformed',
      `an AKP JWK imports with alg one of ${akpImportAlgs().join(', ')} and pub`,
    );
  const extra = Object.keys(jwk).filter((m) => !AKP_MEMBERS.has(m));
  if (extra.length > 0) throw bad(`has members an AKP JWK does not have: ${extra.join(', ')}`);
  const pub = bytesOf(jwk.pub, 'pub');
  const material =
    jwk.priv === undefined
      ? publicMaterial(type, pub, alg)
      : privateMaterial(type, bytesOf(jwk.priv, 'priv'), alg);
  // The public key the service would publish for this material is the one the JWK names.
  let derived: unknown;
  try {
    derived = publicJwk(material).pub;
  } catch (cause) {
    throw bad(`pub is not an ${alg} public key`, cause);
  }
  if (derived !== pub.toString('base64url'))
    throw bad(
      jwk.priv === undefined
        ? `pub is not an ${alg} public key`
        : 'pub is not the public key of its priv',
    );
  return {
    type,
    material,
    hasPrivateKey: jwk.priv !== undefined,
    ...(typeof jwk.kid === 'string' ? { kid: jwk.kid } : {}),
  };
}
