/**
 * ECDH-ES key agreement for JWE (RFC 7518 section 4.6): the Concat KDF of NIST SP 800-56A
 * section 5.8.1 with SHA-256, and AES Key Wrap (RFC 3394) for the +AxxxKW variants.
 */
import { createCipheriv, createDecipheriv, createHash, createPublicKey, diffieHellman, generateKeyPairSync } from 'node:crypto';
import type { KeyObject } from 'node:crypto';

/** The OpenSSL names of the JOSE curves. */
export const OPENSSL_CURVE = { 'P-256': 'prime256v1', 'P-384': 'secp384r1', 'P-521': 'secp521r1' } as const;
export type JoseCurve = keyof typeof OPENSSL_CURVE;

/** The JOSE header's `epk`: an EC public JWK without private members. */
export interface EphemeralJwk {
  kty: 'EC';
  crv: JoseCurve;
  x: string;
  y: string;
}

function lengthPrefixed(value: Buffer): Buffer {
  const out = Buffer.allocUnsafe(4 + value.length);
  out.writeUInt32BE(value.length, 0);
  value.copy(out, 4);
  return out;
}

/**
 * Concat KDF (RFC 7518 section 4.6.2): AlgorithmID is the `alg` for key wrapping or the `enc` for
 * direct agreement, PartyUInfo/PartyVInfo are `apu`/`apv` (empty when absent), SuppPubInfo is
 * keydatalen in bits, SuppPrivInfo is empty.
 */
export function concatKdf(z: Buffer, keyBits: number, algorithmId: string, apu = Buffer.alloc(0), apv = Buffer.alloc(0)): Buffer {
  const otherInfo = Buffer.concat([
    lengthPrefixed(Buffer.from(algorithmId, 'ascii')),
    lengthPrefixed(apu),
    lengthPrefixed(apv),
    Buffer.from([keyBits >>> 24, (keyBits >>> 16) & 0xff, (keyBits >>> 8) & 0xff, keyBits & 0xff]),
  ]);
  const rounds = Math.ceil(keyBits / 256);
  const blocks: Buffer[] = [];
  for (let i = 1; i <= rounds; i++) {
    blocks.push(createHash('sha256').update(Buffer.from([i >>> 24, (i >>> 16) & 0xff, (i >>> 8) & 0xff, i & 0xff])).update(z).update(otherInfo).digest());
  }
  return Buffer.concat(blocks).subarray(0, keyBits / 8);
}

export const curveSize = (crv: JoseCurve): number => (crv === 'P-521' ? 66 : crv === 'P-384' ? 48 : 32);

/** Agrees on Z with a fresh ephemeral key; returns Z and the ephemeral public key as the header's `epk`. */
export function ephemeralAgreement(crv: JoseCurve, recipient: KeyObject): { z: Buffer; epk: EphemeralJwk } {
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
  if (!e || typeof e !== 'object' || e.kty !== 'EC' || e.crv !== crv || typeof e.x !== 'string' || typeof e.y !== 'string') {
    throw new Error('epk is not an EC public key on the recipient curve');
  }
  // OpenSSL refuses points that are not on the curve when the JWK is imported.
  const publicKey = createPublicKey({ key: { kty: 'EC', crv, x: e.x, y: e.y }, format: 'jwk' });
  return diffieHellman({ privateKey, publicKey });
}

const KW_IV = Buffer.from('a6a6a6a6a6a6a6a6', 'hex');

/** AES Key Wrap (RFC 3394) of a content key. */
export function aesKeyWrap(kek: Buffer, cek: Buffer): Buffer {
  const c = createCipheriv(`id-aes${kek.length * 8}-wrap`, kek, KW_IV);
  return Buffer.concat([c.update(cek), c.final()]);
}

/** AES Key Unwrap (RFC 3394); throws when the integrity check fails. */
export function aesKeyUnwrap(kek: Buffer, wrapped: Buffer): Buffer {
  const d = createDecipheriv(`id-aes${kek.length * 8}-wrap`, kek, KW_IV);
  return Buffer.concat([d.update(wrapped), d.final()]);
}
