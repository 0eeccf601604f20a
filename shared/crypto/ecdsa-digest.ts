/**
 * ECDSA over a digest the caller computed (AWS KMS MessageType DIGEST; FIPS 186-5 section 6.4).
 * Node has no prehash ECDSA: crypto.sign and WebCrypto always hash their input. So:
 *
 *   signing    the nonce k and the point kG come from OpenSSL (createECDH().generateKeys(): a
 *              uniformly random scalar and a constant-time scalar multiplication); the two
 *              scalar equations s = k^-1 (e + r d) mod n are done here with BigInt. BigInt is not
 *              constant time, so secret values are blinded before every variable-time step:
 *              the inverse is taken of k*b for a random b, and d enters as (d - a) + a for a random a.
 *   verifying  public data only: u1 G + u2 Q in Jacobian coordinates (a = -3 on all three curves).
 *
 * Signatures are IEEE P1363 (r || s, fixed width), as JOSE ES256/384/512 uses (RFC 7518 section 3.4).
 */
import { createECDH, randomBytes } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { OPENSSL_CURVE } from './ecdh-es.ts';
import type { JoseCurve } from './ecdh-es.ts';

interface Curve {
  p: bigint;
  n: bigint;
  g: Point;
  size: number;
  nBits: number;
}

/** A point in Jacobian coordinates (X/Z^2, Y/Z^3); Z = 0 is the point at infinity. */
interface Point {
  x: bigint;
  y: bigint;
  z: bigint;
}

const h = (s: string): bigint => BigInt(`0x${s}`);

// Domain parameters p, n, G of FIPS 186-5 / SEC 2 (as `openssl ecparam -param_enc explicit -text` prints them); a = -3.
const CURVES: Record<JoseCurve, Curve> = {
  'P-256': curve(
    'ffffffff00000001000000000000000000000000ffffffffffffffffffffffff',
    'ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551',
    '6b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c296',
    '4fe342e2fe1a7f9b8ee7eb4a7c0f9e162bce33576b315ececbb6406837bf51f5',
    32,
  ),
  'P-384': curve(
    'fffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffeffffffff0000000000000000ffffffff',
    'ffffffffffffffffffffffffffffffffffffffffffffffffc7634d81f4372ddf581a0db248b0a77aecec196accc52973',
    'aa87ca22be8b05378eb1c71ef320ad746e1d3b628ba79b9859f741e082542a385502f25dbf55296c3a545e3872760ab7',
    '3617de4a96262c6f5d9e98bf9292dc29f8f41dbd289a147ce9da3113b5f0b8c00a60b1ce1d7e819d7a431d7c90ea0e5f',
    48,
  ),
  'P-521': curve(
    '01ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff',
    '01fffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffa51868783bf2f966b7fcc0148f709a5d03bb5c9b8899c47aebb6fb71e91386409',
    '00c6858e06b70404e9cd9e3ecb662395b4429c648139053fb521f828af606b4d3dbaa14b5e77efe75928fe1dc127a2ffa8de3348b3c1856a429bf97e7e31c2e5bd66',
    '011839296a789a3bc0045c8a5fb42c7d1bd998f54449579b446817afbd17273e662c97ee72995ef42640c550b9013fad0761353c7086a272c24088be94769fd16650',
    66,
  ),
};

function curve(p: string, n: string, gx: string, gy: string, size: number): Curve {
  const order = h(n);
  return {
    p: h(p),
    n: order,
    g: { x: h(gx), y: h(gy), z: 1n },
    size,
    nBits: order.toString(2).length,
  };
}

const mod = (a: bigint, m: bigint): bigint => {
  const r = a % m;
  return r < 0n ? r + m : r;
};

/** Modular inverse by the extended Euclidean algorithm (variable time: only ever given blinded or public values). */
function invert(a: bigint, m: bigint): bigint {
  let [r0, r1] = [mod(a, m), m];
  let [s0, s1] = [1n, 0n];
  while (r1 !== 0n) {
    const q = r0 / r1;
    [r0, r1] = [r1, r0 - q * r1];
    [s0, s1] = [s1, s0 - q * s1];
  }
  if (r0 !== 1n) throw new Error('not invertible');
  return mod(s0, m);
}

const toBig = (b: Buffer): bigint => (b.length === 0 ? 0n : BigInt(`0x${b.toString('hex')}`));
const toBytes = (v: bigint, size: number): Buffer =>
  Buffer.from(v.toString(16).padStart(size * 2, '0'), 'hex');

/** A uniformly random scalar in [1, n-1] (64 extra bits make the modulo bias negligible). */
function randomScalar(c: Curve): bigint {
  return mod(toBig(randomBytes(c.size + 8)), c.n - 1n) + 1n;
}

/** bits2int of FIPS 186-5: the leftmost nBits bits of the digest as an integer. */
function digestToInt(c: Curve, digest: Buffer): bigint {
  const e = toBig(digest);
  const excess = digest.length * 8 - c.nBits;
  return excess > 0 ? e >> BigInt(excess) : e;
}

function double(c: Curve, P: Point): Point {
  if (P.z === 0n || P.y === 0n) return { x: 0n, y: 1n, z: 0n };
  const { p } = c;
  // dbl-2001-b, for a = -3.
  const delta = (P.z * P.z) % p;
  const gamma = (P.y * P.y) % p;
  const beta = (P.x * gamma) % p;
  const alpha = mod(3n * (P.x - delta) * (P.x + delta), p);
  const x = mod(alpha * alpha - 8n * beta, p);
  const z = mod((P.y + P.z) ** 2n - gamma - delta, p);
  const y = mod(alpha * (4n * beta - x) - 8n * gamma * gamma, p);
  return { x, y, z };
}

function add(c: Curve, P: Point, Q: Point): Point {
  if (P.z === 0n) return Q;
  if (Q.z === 0n) return P;
  const { p } = c;
  // add-2007-bl.
  const z1z1 = (P.z * P.z) % p;
  const z2z2 = (Q.z * Q.z) % p;
  const u1 = (P.x * z2z2) % p;
  const u2 = (Q.x * z1z1) % p;
  const s1 = (P.y * Q.z * z2z2) % p;
  const s2 = (Q.y * P.z * z1z1) % p;
  const hh = mod(u2 - u1, p);
  const r = mod(2n * (s2 - s1), p);
  if (hh === 0n) return r === 0n ? double(c, P) : { x: 0n, y: 1n, z: 0n };
  const i = (4n * hh * hh) % p;
  const j = (hh * i) % p;
  const v = (u1 * i) % p;
  const x = mod(r * r - j - 2n * v, p);
  const y = mod(r * (v - x) - 2n * s1 * j, p);
  const z = mod(((P.z + Q.z) ** 2n - z1z1 - z2z2) * hh, p);
  return { x, y, z };
}

/** u1 G + u2 Q by Shamir's trick: one pass over the bits of both scalars. Public inputs only. */
function linearCombination(c: Curve, u1: bigint, Q: Point, u2: bigint): Point {
  const gq = add(c, c.g, Q);
  let R: Point = { x: 0n, y: 1n, z: 0n };
  for (let i = Math.max(u1.toString(2).length, u2.toString(2).length) - 1; i >= 0; i--) {
    R = double(c, R);
    const b1 = (u1 >> BigInt(i)) & 1n;
    const b2 = (u2 >> BigInt(i)) & 1n;
    if (b1 && b2) R = add(c, R, gq);
    else if (b1) R = add(c, R, c.g);
    else if (b2) R = add(c, R, Q);
  }
  return R;
}

function affineX(c: Curve, P: Point): bigint {
  const zi = invert(P.z, c.p);
  return mod(P.x * zi * zi, c.p);
}

const privateScalars = new WeakMap<KeyObject, bigint>();
const publicPoints = new WeakMap<KeyObject, Point>();

function privateScalar(key: KeyObject): bigint {
  let d = privateScalars.get(key);
  if (d === undefined)
    privateScalars.set(
      key,
      (d = toBig(Buffer.from(key.export({ format: 'jwk' }).d!, 'base64url'))),
    );
  return d;
}

function publicPoint(c: Curve, key: KeyObject): Point {
  let q = publicPoints.get(key);
  if (q === undefined) {
    const raw = key.export({ format: 'raw-public' });
    publicPoints.set(
      key,
      (q = { x: toBig(raw.subarray(1, 1 + c.size)), y: toBig(raw.subarray(1 + c.size)), z: 1n }),
    );
  }
  return q;
}

/** ECDSA signature (P1363) over a precomputed digest with an EC private key on `crv`. */
export function ecdsaSignDigest(privateKey: KeyObject, crv: JoseCurve, digest: Buffer): Buffer {
  const c = CURVES[crv];
  const { n } = c;
  const d = privateScalar(privateKey);
  const e = digestToInt(c, digest);
  for (;;) {
    const ecdh = createECDH(OPENSSL_CURVE[crv]);
    const point = ecdh.generateKeys();
    const k = toBig(ecdh.getPrivateKey());
    const r = mod(toBig(point.subarray(1, 1 + c.size)), n);
    if (r === 0n) continue;
    const b = randomScalar(c);
    const kInv = mod(b * invert(mod(k * b, n), n), n);
    const a = randomScalar(c);
    const s = mod(kInv * mod(e + r * mod(d - a, n) + r * a, n), n);
    if (s === 0n) continue;
    return Buffer.concat([toBytes(r, c.size), toBytes(s, c.size)]);
  }
}

/** Checks a P1363 ECDSA signature against a precomputed digest with an EC public key on `crv`. */
export function ecdsaVerifyDigest(
  publicKey: KeyObject,
  crv: JoseCurve,
  digest: Buffer,
  signature: Buffer,
): boolean {
  const c = CURVES[crv];
  if (signature.length !== 2 * c.size) return false;
  const r = toBig(signature.subarray(0, c.size));
  const s = toBig(signature.subarray(c.size));
  if (r <= 0n || r >= c.n || s <= 0n || s >= c.n) return false;
  const w = invert(s, c.n);
  const e = digestToInt(c, digest);
  const R = linearCombination(c, mod(e * w, c.n), publicPoint(c, publicKey), mod(r * w, c.n));
  if (R.z === 0n) return false;
  return mod(affineX(c, R), c.n) === r;
}
