/**
 * ECDSA verification over a precomputed digest (SEC 1 v2 section 4.1.4). Node can only verify
 * ECDSA over a whole message, but a CMS signer without signed attributes signs the content itself
 * (RFC 5652 section 5.4), of which the streaming engine holds only the digest. Verification uses
 * public data only, so plain BigInt arithmetic (not constant time) is fine; it runs once per message.
 */
import type { KeyObject } from 'node:crypto';
import { walk } from './der.ts';

interface Curve {
  p: bigint;
  n: bigint;
  g: [bigint, bigint];
}

const CURVES: Record<string, Curve> = {
  'P-256': {
    p: 0xffffffff00000001000000000000000000000000ffffffffffffffffffffffffn,
    n: 0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551n,
    g: [0x6b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c296n, 0x4fe342e2fe1a7f9b8ee7eb4a7c0f9e162bce33576b315ececbb6406837bf51f5n],
  },
  'P-384': {
    p: 0xfffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffeffffffff0000000000000000ffffffffn,
    n: 0xffffffffffffffffffffffffffffffffffffffffffffffffc7634d81f4372ddf581a0db248b0a77aecec196accc52973n,
    g: [
      0xaa87ca22be8b05378eb1c71ef320ad746e1d3b628ba79b9859f741e082542a385502f25dbf55296c3a545e3872760ab7n,
      0x3617de4a96262c6f5d9e98bf9292dc29f8f41dbd289a147ce9da3113b5f0b8c00a60b1ce1d7e819d7a431d7c90ea0e5fn,
    ],
  },
  'P-521': {
    p: (1n << 521n) - 1n,
    n: 0x01fffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffa51868783bf2f966b7fcc0148f709a5d03bb5c9b8899c47aebb6fb71e91386409n,
    g: [
      0x00c6858e06b70404e9cd9e3ecb662395b4429c648139053fb521f828af606b4d3dbaa14b5e77efe75928fe1dc127a2ffa8de3348b3c1856a429bf97e7e31c2e5bd66n,
      0x011839296a789a3bc0045c8a5fb42c7d1bd998f54449579b446817afbd17273e662c97ee72995ef42640c550b9013fad0761353c7086a272c24088be94769fd16650n,
    ],
  },
};

type Point = [bigint, bigint] | null;

const mod = (a: bigint, m: bigint): bigint => ((a % m) + m) % m;

function inv(a: bigint, m: bigint): bigint {
  let [r0, r1, s0, s1] = [mod(a, m), m, 1n, 0n];
  while (r1 !== 0n) {
    const q = r0 / r1;
    [r0, r1] = [r1, r0 - q * r1];
    [s0, s1] = [s1, s0 - q * s1];
  }
  return mod(s0, m);
}

function add(c: Curve, a: Point, b: Point): Point {
  if (!a) return b;
  if (!b) return a;
  let l: bigint;
  if (a[0] === b[0]) {
    if (mod(a[1] + b[1], c.p) === 0n) return null;
    // Doubling on y^2 = x^3 - 3x + b (every NIST prime curve has a = -3).
    l = mod((3n * a[0] * a[0] - 3n) * inv(2n * a[1], c.p), c.p);
  } else {
    l = mod((b[1] - a[1]) * inv(b[0] - a[0], c.p), c.p);
  }
  const x = mod(l * l - a[0] - b[0], c.p);
  return [x, mod(l * (a[0] - x) - a[1], c.p)];
}

function mul(c: Curve, k: bigint, pt: Point): Point {
  let r: Point = null;
  let q = pt;
  for (let e = k; e > 0n; e >>= 1n) {
    if (e & 1n) r = add(c, r, q);
    q = add(c, q, q);
  }
  return r;
}

const big = (b: Uint8Array): bigint => (b.length ? BigInt('0x' + Buffer.from(b).toString('hex')) : 0n);

/** Verifies a DER ECDSA signature over `digest` with a P-256/384/521 public key. */
export function ecdsaVerifyDigest(pub: KeyObject, digest: Buffer, sig: Buffer): boolean {
  const jwk = pub.export({ format: 'jwk' });
  const c = jwk.crv ? CURVES[jwk.crv] : undefined;
  if (!c || !jwk.x || !jwk.y) return false;
  const top = walk(sig);
  const rs = top && top.length === 1 && top[0].tag === 0x30 ? walk(sig, top[0].valueStart, top[0].end) : null;
  if (!rs || rs.length !== 2 || rs[0].tag !== 2 || rs[1].tag !== 2) return false;
  const r = big(sig.subarray(rs[0].valueStart, rs[0].end));
  const s = big(sig.subarray(rs[1].valueStart, rs[1].end));
  if (r <= 0n || r >= c.n || s <= 0n || s >= c.n) return false;
  const nBits = c.n.toString(2).length;
  let e = big(digest);
  if (digest.length * 8 > nBits) e >>= BigInt(digest.length * 8 - nBits);
  const w = inv(s, c.n);
  const q: Point = [big(Buffer.from(jwk.x, 'base64url')), big(Buffer.from(jwk.y, 'base64url'))];
  const x = add(c, mul(c, mod(e * w, c.n), c.g), mul(c, mod(r * w, c.n), q));
  return x !== null && mod(x[0], c.n) === r;
}
