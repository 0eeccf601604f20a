/**
 * ECDH-ES key agreement for JWE (RFC 7518 section 4.6): Z with a fresh ephemeral key on the
 * sender's side, and Z from a validated `epk` on the recipient's. The KDF and the key wrap are in
 * kdf.ts and aes-kw.ts.
 */
import { createPublicKey, diffieHellman, generateKeyPairSync } from 'node:crypto';
import type { KeyObject } from 'node:crypto';

/** The OpenSSL names of the JOSE curves. */
export const OPENSSL_CURVE = {
  'P-256': 'prime256v1',
  'P-384': 'secp384r1',
  'P-521': 'secp521r1',
} as const;
export type JoseCurve = keyof typeof OPENSSL_CURVE;

/** The JOSE header's `epk`: an EC public JWK without private members. */
export interface EphemeralJwk {
  kty: 'EC';
  crv: JoseCurve;
  x: string;
  y: string;
}

export const curveSize = (crv: JoseCurve): number =>
  crv === 'P-521' ? 66 : crv === 'P-384' ? 48 : 32;

/** Agrees on Z with a fresh ephemeral key; returns Z and the ephemeral public key as the header's `epk`. */
export function ephemeralAgreement(
  crv: JoseCurve,
  recipient: KeyObject,
): { z: Buffer; epk: EphemeralJwk } {
  // KeyObjects all the way: half the cost of createECDH().computeSecret, which re-validates the raw point each time.
  const ephemeral = generateKeyPairSync('ec', { namedCurve: crv });
  const point = ephemeral.publicKey.export({ format: 'raw-public' });
  const size = curveSize(crv);
  const epk: EphemeralJwk = {
    kty: 'EC',
    crv,
    x: point.subarray(1, 1 + size).toString('base64url'),
    y: point.subarray(1 + size).toString('base64url'),
  };
  return { z: diffieHellman({ privateKey: ephemeral.privateKey, publicKey: recipient }), epk };
}

/** Z for the recipient: validates `epk` (right curve, on the curve) before the agreement. */
export function recipientAgreement(privateKey: KeyObject, crv: JoseCurve, epk: unknown): Buffer {
  const e = epk as Partial<EphemeralJwk> | undefined;
  if (
    !e ||
    typeof e !== 'object' ||
    e.kty !== 'EC' ||
    e.crv !== crv ||
    typeof e.x !== 'string' ||
    typeof e.y !== 'string'
  ) {
    throw new Error('epk is not an EC public key on the recipient curve');
  }
  // OpenSSL refuses points that are not on the curve when the JWK is imported.
  const publicKey = createPublicKey({ key: { kty: 'EC', crv, x: e.x, y: e.y }, format: 'jwk' });
  return diffieHellman({ privateKey, publicKey });
}

const JOSE_CURVE = new Map<string, JoseCurve>(
  Object.entries(OPENSSL_CURVE).map(([jose, openssl]) => [openssl, jose as JoseCurve]),
);

/** The JOSE name of an EC key's curve, or undefined for any other key or curve. */
export function joseCurveOf(key: KeyObject): JoseCurve | undefined {
  if (key.asymmetricKeyType !== 'ec') return undefined;
  return JOSE_CURVE.get(key.asymmetricKeyDetails?.namedCurve ?? '');
}
