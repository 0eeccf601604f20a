/**
 * An HPKE JWE reader the service did not write, to open its post-quantum outputs in tests: the
 * KEMs are @hpke/ml-kem (the `mlkem` package) and @hpke/hybridkem-x-wing, SHAKE256 and SHA3-256
 * are @hpke/common's (noble), AES-256-GCM is @hpke/core's (WebCrypto). Only the short key schedule
 * of draft-ietf-hpke-hpke (one-stage KDF, base mode) and the JWE framing of
 * draft-ietf-jose-hpke-encrypt are written here, and the tests prove them on the drafts'
 * published vectors before trusting them with our outputs. Nothing here imports shared/.
 *
 * No package here implements MLKEM768-P256 or MLKEM1024-P384, so their decapsulation is put
 * together from @hpke/ml-kem, noble's SHAKE256/SHA3-256 and the P-256/P-384 arithmetic below
 * (plain BigInt, not OpenSSL, which the service uses), after draft-irtf-cfrg-concrete-hybrid-kems;
 * the draft-ietf-hpke-pq vectors check it first.
 */
import type { DecipherGCM } from 'node:crypto';
import { createDecipheriv } from 'node:crypto';
import { Aes256Gcm } from '@hpke/core';
import { sha3_256, shake256 } from '@hpke/common';
import { MlKem1024, MlKem768 } from '@hpke/ml-kem';
import { XWing } from '@hpke/hybridkem-x-wing';

/** A short Weierstrass curve y^2 = x^3 - 3x + b over GF(p), for the NIST groups of the hybrids. */
interface Curve {
  p: bigint;
  b: bigint;
  n: bigint;
  gx: bigint;
  gy: bigint;
  bytes: number;
}
const P256: Curve = {
  p: 0xffffffff00000001000000000000000000000000ffffffffffffffffffffffffn,
  b: 0x5ac635d8aa3a93e7b3ebbd55769886bc651d06b0cc53b0f63bce3c3e27d2604bn,
  n: 0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551n,
  gx: 0x6b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c296n,
  gy: 0x4fe342e2fe1a7f9b8ee7eb4a7c0f9e162bce33576b315ececbb6406837bf51f5n,
  bytes: 32,
};
const P384: Curve = {
  p: 0xfffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffeffffffff0000000000000000ffffffffn,
  b: 0xb3312fa7e23ee7e4988e056be3f82d19181d9c6efe8141120314088f5013875ac656398d8a2ed19d2a85c8edd3ec2aefn,
  n: 0xffffffffffffffffffffffffffffffffffffffffffffffffc7634d81f4372ddf581a0db248b0a77aecec196accc52973n,
  gx: 0xaa87ca22be8b05378eb1c71ef320ad746e1d3b628ba79b9859f741e082542a385502f25dbf55296c3a545e3872760ab7n,
  gy: 0x3617de4a96262c6f5d9e98bf9292dc29f8f41dbd289a147ce9da3113b5f0b8c00a60b1ce1d7e819d7a431d7c90ea0e5fn,
  bytes: 48,
};

type Point = { x: bigint; y: bigint } | null; // null: the point at infinity
const mod = (a: bigint, m: bigint) => ((a % m) + m) % m;
function inv(a: bigint, m: bigint): bigint {
  let [r0, r1, s0, s1] = [mod(a, m), m, 1n, 0n];
  while (r1 !== 0n) {
    const q = r0 / r1;
    [r0, r1, s0, s1] = [r1, r0 - q * r1, s1, s0 - q * s1];
  }
  return mod(s0, m);
}
function add(c: Curve, a: Point, b: Point): Point {
  if (!a) return b;
  if (!b) return a;
  if (a.x === b.x && mod(a.y + b.y, c.p) === 0n) return null;
  const l =
    a.x === b.x
      ? mod((3n * a.x * a.x - 3n) * inv(2n * a.y, c.p), c.p)
      : mod((b.y - a.y) * inv(b.x - a.x, c.p), c.p);
  const x = mod(l * l - a.x - b.x, c.p);
  return { x, y: mod(l * (a.x - x) - a.y, c.p) };
}
function mul(c: Curve, k: bigint, pt: Point): Point {
  let r: Point = null;
  for (let i = BigInt(k.toString(2).length - 1); i >= 0n; i--) {
    r = add(c, r, r);
    if ((k >> i) & 1n) r = add(c, r, pt);
  }
  return r;
}
const int = (b: Uint8Array) => BigInt(`0x${Buffer.from(b).toString('hex') || '0'}`);
const fe = (c: Curve, v: bigint) => Buffer.from(v.toString(16).padStart(2 * c.bytes, '0'), 'hex');
const sec1 = (c: Curve, pt: Point) => Buffer.concat([Buffer.from([4]), fe(c, pt!.x), fe(c, pt!.y)]);
function point(c: Curve, b: Uint8Array): Point {
  if (b.length !== 1 + 2 * c.bytes || b[0] !== 4) throw new Error('not an uncompressed point');
  const x = int(b.subarray(1, 1 + c.bytes));
  const y = int(b.subarray(1 + c.bytes));
  if (x >= c.p || y >= c.p || mod(y * y - (x * x * x - 3n * x + c.b), c.p) !== 0n)
    throw new Error('not a point of the curve');
  return { x, y };
}

/**
 * MLKEM768-P256 / MLKEM1024-P384 from the 32-byte seed: the ML-KEM half from SHAKE256(seed)[0:64],
 * the scalar the first Nscalar-byte block after it in [1, n), combined as
 * SHA3-256(ss_M || ss_T || ct_T || pk_T || label).
 */
class NistHybrid {
  private readonly mlKem: () => MlKem768 | MlKem1024;
  private readonly c: Curve;
  private readonly seedT: number;
  private readonly ctM: number;
  private readonly label: string;

  constructor(
    mlKem: () => MlKem768 | MlKem1024,
    c: Curve,
    seedT: number,
    ctM: number,
    label: string,
  ) {
    this.mlKem = mlKem;
    this.c = c;
    this.seedT = seedT;
    this.ctM = ctM;
    this.label = label;
  }

  private expand(seed: Uint8Array): { m: Uint8Array; sk: bigint } {
    if (seed.length !== 32) throw new Error('a hybrid seed is 32 bytes');
    const x = shake256(seed, { dkLen: 64 + this.seedT });
    for (let at = 64; at + this.c.bytes <= x.length; at += this.c.bytes) {
      const sk = int(x.subarray(at, at + this.c.bytes));
      if (sk !== 0n && sk < this.c.n) return { m: x.subarray(0, 64), sk };
    }
    throw new Error('no scalar');
  }

  async publicKey(seed: Uint8Array): Promise<Buffer> {
    const { m, sk } = this.expand(seed);
    const kem = this.mlKem();
    const { publicKey } = await kem.deriveKeyPair(new Uint8Array(m).buffer);
    const pkM = Buffer.from(await kem.serializePublicKey(publicKey));
    return Buffer.concat([pkM, sec1(this.c, mul(this.c, sk, { x: this.c.gx, y: this.c.gy }))]);
  }

  async decap(seed: Uint8Array, enc: Uint8Array): Promise<Uint8Array> {
    const { m, sk } = this.expand(seed);
    const kem = this.mlKem();
    const recipientKey = await kem.deserializePrivateKey(new Uint8Array(m).buffer);
    const ctM = new Uint8Array(enc.subarray(0, this.ctM)).buffer;
    const ssM = new Uint8Array(await kem.decap({ enc: ctM, recipientKey }));
    const ctT = enc.subarray(this.ctM);
    const shared = mul(this.c, sk, point(this.c, ctT));
    if (!shared) throw new Error('the shared point is the identity');
    const pkT = sec1(this.c, mul(this.c, sk, { x: this.c.gx, y: this.c.gy }));
    return sha3_256(Buffer.concat([ssM, fe(this.c, shared.x), ctT, pkT, Buffer.from(this.label)]));
  }
}

const HYBRID_P256 = new NistHybrid(() => new MlKem768(), P256, 128, 1088, 'MLKEM768-P256');
const HYBRID_P384 = new NistHybrid(() => new MlKem1024(), P384, 48, 1568, 'MLKEM1024-P384');

/** The KEM decapsulation by HPKE KEM id, from the HPKE private key (the seed): the independent side. */
export async function kemDecap(kemId: number, priv: Uint8Array, enc: Uint8Array): Promise<Buffer> {
  if (kemId === 0x0050) return Buffer.from(await HYBRID_P256.decap(priv, enc));
  if (kemId === 0x0051) return Buffer.from(await HYBRID_P384.decap(priv, enc));
  throw new Error(`no hybrid KEM ${kemId}`);
}

/** The suites, by JWE `alg` without `-KE`: KEM id and a fresh KEM of the independent packages. */
const SUITES: Record<
  string,
  { kemId: number; kem: () => MlKem768 | MlKem1024 | XWing | NistHybrid }
> = {
  'HPKE-8': { kemId: 0x0050, kem: () => HYBRID_P256 },
  'HPKE-9': { kemId: 0x647a, kem: () => new XWing() },
  'HPKE-10': { kemId: 0x0051, kem: () => HYBRID_P384 },
  'HPKE-12': { kemId: 0x0041, kem: () => new MlKem768() },
  'HPKE-13': { kemId: 0x0042, kem: () => new MlKem1024() },
};

const u16 = (n: number) => Buffer.from([n >> 8, n & 0xff]);
const lp = (b: Uint8Array) => Buffer.concat([u16(b.length), b]);

function keySchedule(kemId: number, shared: Uint8Array, info: Uint8Array) {
  const suiteId = Buffer.concat([Buffer.from('HPKE'), u16(kemId), u16(0x0011), u16(0x0002)]);
  const length = 32 + 12 + 64;
  const ikm = Buffer.concat([
    lp(Buffer.alloc(0)), // psk
    lp(shared),
    Buffer.from('HPKE-v1'),
    suiteId,
    lp(Buffer.from('secret')),
    u16(length),
    Buffer.from([0]), // mode_base
    lp(Buffer.alloc(0)), // psk_id
    lp(info),
  ]);
  const secret = Buffer.from(shake256(ikm, { dkLen: length }));
  return { key: secret.subarray(0, 32), nonce: secret.subarray(32, 44) };
}

/** HPKE Open with the independent KEM; `priv` is the HPKE SerializePrivateKey (the seed). */
export async function hpkeOpen(
  alg: string,
  priv: Uint8Array,
  enc: Uint8Array,
  info: Uint8Array,
  aad: Uint8Array,
  ct: Uint8Array,
): Promise<Buffer> {
  const suite = SUITES[alg.replace(/-KE$/, '')];
  if (!suite) throw new Error(`no suite for ${alg}`);
  const kem = suite.kem();
  let shared: Uint8Array;
  if (kem instanceof NistHybrid) shared = await kem.decap(priv, enc);
  else {
    const recipientKey = await kem.deserializePrivateKey(new Uint8Array(priv).buffer);
    shared = new Uint8Array(await kem.decap({ enc: new Uint8Array(enc).buffer, recipientKey }));
  }
  const { key, nonce } = keySchedule(suite.kemId, shared, info);
  const ctx = new Aes256Gcm().createEncryptionContext(new Uint8Array(key).buffer);
  return Buffer.from(await ctx.open(nonce, ct, aad));
}

/** The public key the independent KEM derives from a private key: the check of `pub`. */
export async function hpkePublicKey(alg: string, priv: Uint8Array): Promise<Buffer> {
  const kem = SUITES[alg.replace(/-KE$/, '')].kem();
  if (kem instanceof NistHybrid) return kem.publicKey(priv);
  // X-Wing's deriveKeyPair hashes its input first (HPKE DeriveKeyPair); its key pair *from* the
  // seed is generateKeyPairDerand. ML-KEM's deriveKeyPair takes d || z as it is.
  const { publicKey } =
    kem instanceof XWing
      ? await kem.generateKeyPairDerand(new Uint8Array(priv))
      : await kem.deriveKeyPair(new Uint8Array(priv).buffer);
  return Buffer.from(await kem.serializePublicKey(publicKey));
}

const b64 = (s: string) => Buffer.from(s, 'base64url');

function recipientStructure(enc: string): Buffer {
  return Buffer.concat([
    Buffer.from('JOSE-HPKE rcpt'),
    Buffer.from([0xff]),
    Buffer.from(enc),
    Buffer.from([0xff]),
  ]);
}

/** Opens a compact JWE, Integrated (`HPKE-n`) or Key Encryption (`HPKE-n-KE`). */
export async function openCompact(compact: string, priv: Uint8Array): Promise<Buffer> {
  const [h, ek, iv, ct, tag] = compact.split('.');
  const header = JSON.parse(b64(h).toString()) as Record<string, string>;
  if (!header.alg.endsWith('-KE')) {
    if (header.enc !== undefined || iv !== '' || tag !== '') throw new Error('not Integrated');
    return hpkeOpen(header.alg, priv, b64(ek), new Uint8Array(0), Buffer.from(h), b64(ct));
  }
  const cek = await hpkeOpen(
    header.alg,
    priv,
    b64(header.ek),
    recipientStructure(header.enc),
    new Uint8Array(0),
    b64(ek),
  );
  return gcm(header.enc, cek, b64(iv), b64(ct), b64(tag), Buffer.from(h));
}

/**
 * Opens a General or flattened JSON JWE whose recipients use HPKE Key Encryption, with the
 * recipient whose `kid` is given; `ciphertext` and `tag` may come apart (a detached form).
 */
export async function openJson(
  jwe: {
    protected: string;
    aad?: string;
    iv: string;
    recipients?: { header?: Record<string, string>; encrypted_key: string }[];
    header?: Record<string, string>;
    encrypted_key?: string;
  },
  kid: string,
  priv: Uint8Array,
  body: { ciphertext: Buffer; tag: Buffer },
): Promise<Buffer> {
  const prot = JSON.parse(b64(jwe.protected).toString()) as Record<string, string>;
  const recipients = jwe.recipients ?? [{ header: jwe.header, encrypted_key: jwe.encrypted_key! }];
  const r = recipients.find((x) => (x.header?.kid ?? prot.kid) === kid);
  if (!r) throw new Error(`no recipient ${kid}`);
  const h = { ...prot, ...r.header };
  const cek = await hpkeOpen(
    h.alg,
    priv,
    b64(h.ek),
    recipientStructure(h.enc),
    new Uint8Array(0),
    b64(r.encrypted_key),
  );
  const aad = Buffer.from(jwe.aad === undefined ? jwe.protected : `${jwe.protected}.${jwe.aad}`);
  return gcm(h.enc, cek, b64(jwe.iv), body.ciphertext, body.tag, aad);
}

function gcm(enc: string, cek: Buffer, iv: Buffer, ct: Buffer, tag: Buffer, aad: Buffer): Buffer {
  const bits = /^A(128|192|256)GCM$/.exec(enc)?.[1];
  if (!bits) throw new Error(`enc ${enc} is not read here`);
  const d = createDecipheriv(`aes-${bits}-gcm`, cek, iv) as DecipherGCM;
  d.setAAD(aad);
  d.setAuthTag(tag);
  return Buffer.concat([d.update(ct), d.final()]);
}
