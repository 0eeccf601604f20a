/**
 * An ML-DSA key given as an `AKP` JWK (RFC 9964 section 3: `alg` names the parameter set, `pub`
 * is the raw public key, `priv` the 32-byte seed), read into the DER forms a key import stores.
 * A `priv` must give the `pub` beside it, as for the HPKE JWKs (hpke-jwe.ts hpkeKeyFromJwk).
 */
import { createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';
import { problem } from '../errors/index.ts';
import { ML_DSA_ALGS, PQ_MEMBERS } from './pq-identifiers.ts';

export interface AkpKeyDer {
  /** The key type of the registry: `ml-dsa-44`, `ml-dsa-65`, `ml-dsa-87`. */
  type: string;
  publicKeyDer: Buffer;
  /** Absent for a public JWK: a verify-only key. */
  privateKeyDer?: Buffer;
  /** The JWK's own `kid`, when it has one. */
  kid?: string;
}

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

/** Reads an ML-DSA AKP JWK; any other, or one whose members do not fit, is keystore-malformed. */
export function mlDsaKeyFromJwk(jwk: Record<string, unknown>): AkpKeyDer {
  const alg = typeof jwk.alg === 'string' ? jwk.alg : '';
  if (!ML_DSA_ALGS.has(alg) || typeof jwk.pub !== 'string')
    throw problem(
      'keystore_malformed',
      `an AKP JWK imports as an ML-DSA key: alg one of ${[...ML_DSA_ALGS.keys()].join(', ')} and pub`,
    );
  const type = alg.toLowerCase();
  const bad = (what: string, cause?: unknown) =>
    problem('keystore_malformed', `the AKP JWK ${what}`, { cause });
  let publicKey: KeyObject;
  try {
    publicKey = createPublicKey({
      key: Buffer.from(jwk.pub, 'base64url'),
      format: 'raw-public',
      asymmetricKeyType: type,
    } as never);
  } catch (cause) {
    throw bad(`pub is not an ${alg} public key`, cause);
  }
  let privateKey: KeyObject | undefined;
  if (jwk.priv !== undefined) {
    try {
      privateKey = createPrivateKey({
        key: Buffer.from(String(jwk.priv), 'base64url'),
        format: 'raw-seed',
        asymmetricKeyType: type,
      } as never);
    } catch (cause) {
      throw bad(`priv is not an ${alg} seed`, cause);
    }
    const derived = createPublicKey(privateKey).export({ format: 'raw-public' } as never);
    if (!Buffer.from(derived as unknown as Uint8Array).equals(Buffer.from(jwk.pub, 'base64url')))
      throw bad('pub is not the public key of its priv');
  }
  return {
    type,
    publicKeyDer: publicKey.export({ format: 'der', type: 'spki' }),
    ...(privateKey ? { privateKeyDer: privateKey.export({ format: 'der', type: 'pkcs8' }) } : {}),
    ...(typeof jwk.kid === 'string' ? { kid: jwk.kid } : {}),
  };
}
