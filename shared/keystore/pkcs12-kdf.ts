/**
 * The PKCS#12 key derivation function (RFC 7292 appendix B.2) and the password encodings the
 * format uses. Node has no native form of this KDF, so it is a loop over createHash; its cost is
 * charged to a WorkBudget so a hostile iteration count cannot hold the thread.
 */
import { createHash } from 'node:crypto';
import { problem } from '../errors/index.ts';

/** Purpose byte ID of RFC 7292 appendix B.3. */
export const KDF_KEY = 1;
export const KDF_IV = 2;
export const KDF_MAC = 3;

/** Digest output (u) and block (v) sizes in bytes, RFC 7292 appendix B.2. */
const HASHES: Record<string, { u: number; v: number }> = {
  sha1: { u: 20, v: 64 },
  sha224: { u: 28, v: 64 },
  sha256: { u: 32, v: 64 },
  sha384: { u: 48, v: 128 },
  sha512: { u: 64, v: 128 },
};

/**
 * The work one parse may spend on key derivation, in PBKDF2-iteration units (about 0.15 us
 * each on this hardware). A PKCS#12 KDF iteration runs in JavaScript and costs about ten.
 * The default allows e.g. a 600 000-iteration PBES2 file with a 600 000-iteration MAC.
 */
export class WorkBudget {
  remaining: number;
  constructor(units = 10_000_000) {
    this.remaining = units;
  }

  /** Takes `units` or throws keystore-malformed before any work is done; `label` names `count`. */
  charge(units: number, count: number, label = 'iteration count'): void {
    if (!Number.isSafeInteger(count) || count < 1) {
      throw problem('keystore_malformed', `${label} ${count} is not a positive integer`);
    }
    if (units > this.remaining) {
      throw problem(
        'keystore_malformed',
        `${label} ${count} exceeds what this service derives per keystore`,
      );
    }
    this.remaining -= units;
  }
}

/**
 * RFC 7292 appendix B.1: the password as a BMPString, UTF-16BE with a two-byte zero terminator.
 * An empty password is just the terminator (what OpenSSL writes for `-passout pass:`).
 */
export function bmpPassword(password: string): Buffer {
  const le = Buffer.from(`${password}\0`, 'utf16le');
  return le.swap16();
}

/** Derives `n` bytes for purpose `id` (RFC 7292 appendix B.2, steps 1 to 7). */
export function pkcs12Kdf(
  hash: string,
  password: Buffer,
  salt: Buffer,
  id: number,
  iterations: number,
  n: number,
  budget: WorkBudget,
): Buffer {
  const sizes = HASHES[hash];
  if (!sizes) throw new Error(`pkcs12Kdf: no block size for ${hash}`);
  const { u, v } = sizes;
  const blocks = Math.ceil(n / u);
  budget.charge(blocks * iterations * 10, iterations);

  const D = Buffer.alloc(v, id);
  const I = Buffer.concat([fill(salt, v), fill(password, v)]);
  const out: Buffer[] = [];
  for (let i = 0; i < blocks; i++) {
    let A = createHash(hash).update(D).update(I).digest();
    for (let r = 1; r < iterations; r++) A = createHash(hash).update(A).digest();
    out.push(A);
    if (i + 1 < blocks) addBlockPlusOne(I, fill(A, v, v), v);
  }
  return Buffer.concat(out).subarray(0, n);
}

/** Repeats `x` to fill v * ceil(len/v) bytes (steps 2 and 3); `exact` fixes the length instead. */
function fill(x: Buffer, v: number, exact?: number): Buffer {
  const len = exact ?? v * Math.ceil(x.length / v);
  const out = Buffer.alloc(len);
  for (let i = 0; i < len; i++) out[i] = x[i % x.length];
  return out;
}

/** Step 6C: each v-byte block I_j of I becomes (I_j + B + 1) mod 2^(8v), big-endian. */
function addBlockPlusOne(I: Buffer, B: Buffer, v: number): void {
  for (let j = 0; j < I.length; j += v) {
    let carry = 1;
    for (let k = v - 1; k >= 0; k--) {
      const sum = I[j + k] + B[k] + carry;
      I[j + k] = sum & 0xff;
      carry = sum >> 8;
    }
  }
}

/** Whether the PKCS#12 KDF knows this hash. */
export function isPkcs12KdfHash(hash: string): boolean {
  return Object.hasOwn(HASHES, hash);
}

/** Output length in bytes of a hash this module knows (the HMAC key length of RFC 7292 B.4). */
export function digestLength(hash: string): number {
  const sizes = HASHES[hash];
  if (!sizes) throw new Error(`digestLength: unknown hash ${hash}`);
  return sizes.u;
}
