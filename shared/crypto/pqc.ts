/**
 * Key encapsulation: ML-KEM-768/1024 (FIPS 203) through Node 24's native crypto.encapsulate and
 * crypto.decapsulate, and the hybrids of ML-KEM with an elliptic-curve group that
 * draft-irtf-cfrg-concrete-hybrid-kems defines on the combiner of draft-irtf-cfrg-hybrid-kems
 * (draft-ietf-hpke-pq names them for HPKE): MLKEM768-X25519 (X-Wing,
 * draft-connolly-cfrg-xwing-kem-06 to -10), MLKEM768-P256 and MLKEM1024-P384. All three work alike:
 *
 *   decapsulation key  sk = 32-byte seed; expanded = SHAKE256(sk, 64 + Nseed_T bytes)
 *                      ML-KEM key from seed d||z = expanded[0:64]
 *                      group scalar sk_T = RandomScalar(expanded[64:]): X25519 takes the 32 bytes
 *                      as they are; P-256 (Nseed_T 128) and P-384 (Nseed_T 48) read big-endian
 *                      Nscalar-byte blocks in turn and keep the first that is neither 0 nor >= the
 *                      group order (rejection sampling)
 *   encapsulation key  pk = pk_M || pk_T (X25519: 32 bytes; P-256/P-384: the uncompressed SEC1 point)
 *   Encapsulate(pk)    ephemeral sk_E, ct_T = sk_E * G, ss_T = sk_E * pk_T (X25519 or the x coordinate),
 *                      (ss_M, ct_M) = ML-KEM.Encaps(pk_M), ct = ct_M || ct_T
 *   Combiner           ss = SHA3-256(ss_M || ss_T || ct_T || pk_T || Label)
 *                      Label: "\.//^\" (5c2e2f2f5e5c), "MLKEM768-P256", "MLKEM1024-P384"
 *
 * ct_M is left out of the hash on purpose: the proof relies on ML-KEM's ciphertext binding (its
 * Fujisaki-Okamoto transform), which is what lets our ciphertexts and keys interoperate with other
 * implementations; the unit tests check the drafts' test vectors. ML-DSA and SLH-DSA signatures
 * live in sign.ts.
 */
import {
  createHash,
  createPrivateKey,
  createPublicKey,
  decapsulate as kemDecapsulate,
  diffieHellman,
  encapsulate as kemEncapsulate,
  generateKeyPairSync,
} from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { problem } from '../errors/index.ts';
import { assertUsage } from './registry.ts';
import type { LoadedKey } from './key-material.ts';
import type { KeyUsage } from './registry.ts';

/** The result of an encapsulation: what goes to the key holder, and the secret both sides now share. */
export interface Encapsulation {
  ciphertext: Buffer;
  sharedSecret: Buffer;
}

/** One hybrid KEM: its ML-KEM half, its group, and the constants of its combiner and seed. */
interface HybridKem {
  readonly mlKem: 'ml-kem-768' | 'ml-kem-1024';
  /** Node's key type of the group half; `curve` names the NIST curve of an `ec` one. */
  readonly group: 'x25519' | 'ec';
  readonly curve?: 'P-256' | 'P-384';
  /** ML-KEM ciphertext bytes: ct_M comes first in the hybrid ciphertext. */
  readonly ctM: number;
  /** Group element bytes (ct_T and pk_T). */
  readonly elem: number;
  /** Nseed of the group: the bytes after the ML-KEM seed in the expanded key. */
  readonly seedT: number;
  /** Nscalar: the block RandomScalar reads; absent for X25519, which takes its seed as is. */
  readonly scalar?: number;
  readonly order?: bigint;
  readonly label: Buffer;
}

/** The hybrid KEMs by key type (the catalogue's names; HPKE ids in shared/jose/pq-identifiers.ts). */
const HYBRIDS: Readonly<Record<string, HybridKem>> = {
  'x25519-ml-kem-768': {
    mlKem: 'ml-kem-768',
    group: 'x25519',
    ctM: 1088,
    elem: 32,
    seedT: 32,
    label: Buffer.from('5c2e2f2f5e5c', 'hex'),
  },
  'p256-ml-kem-768': {
    mlKem: 'ml-kem-768',
    group: 'ec',
    curve: 'P-256',
    ctM: 1088,
    elem: 65,
    seedT: 128,
    scalar: 32,
    order: 0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551n,
    label: Buffer.from('MLKEM768-P256'),
  },
  'p384-ml-kem-1024': {
    mlKem: 'ml-kem-1024',
    group: 'ec',
    curve: 'P-384',
    ctM: 1568,
    elem: 97,
    seedT: 48,
    scalar: 48,
    order:
      0xffffffffffffffffffffffffffffffffffffffffffffffffc7634d81f4372ddf581a0db248b0a77aecec196accc52973n,
    label: Buffer.from('MLKEM1024-P384'),
  },
};

const CIPHERTEXT_LENGTH: Record<string, number> = {
  'ml-kem-768': 1088,
  'ml-kem-1024': 1568,
  ...Object.fromEntries(Object.entries(HYBRIDS).map(([t, h]) => [t, h.ctM + h.elem])),
};

/** The key types that encapsulate: ML-KEM and the hybrids. */
export const KEM_KEY_TYPES: readonly string[] = Object.keys(CIPHERTEXT_LENGTH);

function hybridOf(type: string): HybridKem {
  const h = HYBRIDS[type];
  if (!h) throw problem('key_usage_mismatch', `a ${type} key is not a hybrid KEM key`);
  return h;
}

function kemKey(
  key: LoadedKey & { usage?: KeyUsage; usages?: readonly KeyUsage[]; kid?: string },
): void {
  if (key.spec.family !== 'ml-kem' && key.spec.family !== 'hybrid') {
    throw problem('key_usage_mismatch', `a ${key.type} key cannot encapsulate`, {
      details: { allowed: [...KEM_KEY_TYPES] },
    });
  }
  if (key.usage !== undefined)
    assertUsage({ type: key.type, usage: key.usage, usages: key.usages, kid: key.kid }, 'encrypt');
}

/** RandomScalar of a NIST group: the first big-endian block of the seed in [1, order). */
function randomScalar(h: HybridKem, seed: Buffer): Buffer {
  const n = h.scalar!;
  for (let at = 0; at + n <= seed.length; at += n) {
    const block = seed.subarray(at, at + n);
    const k = BigInt(`0x${block.toString('hex')}`);
    if (k !== 0n && k < h.order!) return block;
  }
  // Needs every block of the seed to miss the range: below 2^-128 for a uniform seed.
  throw problem('internal', 'hybrid key derivation found no scalar in its seed');
}

/**
 * Expands a hybrid seed into its ML-KEM and group private keys (expandDecapsulationKey of the
 * hybrid KEM of `type`).
 */
export function hybridExpandSeed(
  type: string,
  seed: Buffer,
): { mlKem: KeyObject; group: KeyObject } {
  const h = hybridOf(type);
  if (seed.length !== 32) throw problem('validation_failed', 'a hybrid KEM seed is 32 bytes');
  const expanded = createHash('shake256', { outputLength: 64 + h.seedT })
    .update(seed)
    .digest();
  const mlKem = createPrivateKey({
    key: expanded.subarray(0, 64),
    format: 'raw-seed',
    asymmetricKeyType: h.mlKem,
  });
  const group =
    h.group === 'x25519'
      ? createPrivateKey({
          key: expanded.subarray(64),
          format: 'raw-private',
          asymmetricKeyType: 'x25519',
        })
      : createPrivateKey({
          key: randomScalar(h, expanded.subarray(64)),
          format: 'raw-private',
          asymmetricKeyType: 'ec',
          namedCurve: h.curve,
        });
  return { mlKem, group };
}

/** A group element as the hybrid writes it: X25519's 32 bytes or the uncompressed SEC1 point. */
function elementBytes(k: KeyObject): Buffer {
  return k.export({ format: 'raw-public' });
}

/** The hybrid encapsulation key pk_M || pk_T of a hybrid key (X-Wing: 1216 bytes). */
export function hybridPublicKey(key: Pick<LoadedKey, 'components'>): Buffer {
  const [m, t] = key.components!;
  return Buffer.concat([m.publicKey.export({ format: 'raw-public' }), elementBytes(t.publicKey)]);
}

function combine(h: HybridKem, ssM: Buffer, ssT: Buffer, ctT: Buffer, pkT: Buffer): Buffer {
  return createHash('sha3-256')
    .update(ssM)
    .update(ssT)
    .update(ctT)
    .update(pkT)
    .update(h.label)
    .digest();
}

/** Encapsulates a fresh shared secret to an ML-KEM or hybrid key; only the public key is needed. */
export function encapsulate(key: LoadedKey & { usage?: KeyUsage; kid?: string }): Encapsulation {
  kemKey(key);
  if (key.spec.family === 'ml-kem') {
    const { ciphertext, sharedKey } = kemEncapsulate(key.publicKey!);
    return { ciphertext, sharedSecret: sharedKey };
  }
  const h = hybridOf(key.type);
  const [m, t] = key.components!;
  const { ciphertext: ctM, sharedKey: ssM } = kemEncapsulate(m.publicKey);
  const ephemeral =
    h.group === 'x25519'
      ? generateKeyPairSync('x25519')
      : generateKeyPairSync('ec', { namedCurve: h.curve! });
  const ssT = diffieHellman({ privateKey: ephemeral.privateKey, publicKey: t.publicKey });
  const ctT = elementBytes(ephemeral.publicKey);
  const pkT = elementBytes(t.publicKey);
  return { ciphertext: Buffer.concat([ctM, ctT]), sharedSecret: combine(h, ssM, ssT, ctT, pkT) };
}

/**
 * Recovers the shared secret from a ciphertext. A ciphertext of the wrong length is a validation
 * failure; ML-KEM itself never fails (implicit rejection returns an unrelated secret), and a
 * group share that is no point or yields no secret is the opaque decryption_failed.
 */
export function decapsulate(
  key: LoadedKey & { usage?: KeyUsage; kid?: string },
  ciphertext: Buffer,
): Buffer {
  kemKey(key);
  const expected = CIPHERTEXT_LENGTH[key.type];
  if (ciphertext.length !== expected)
    throw problem('validation_failed', `a ${key.type} ciphertext is ${expected} bytes`);
  if (key.spec.family === 'ml-kem') {
    if (!key.privateKey) throw problem('key_usage_mismatch', 'the key has no private part');
    return kemDecapsulate(key.privateKey, ciphertext);
  }
  const h = hybridOf(key.type);
  const [m, t] = key.components!;
  if (!m.privateKey || !t.privateKey)
    throw problem('key_usage_mismatch', 'the key has no private part');
  const ctM = ciphertext.subarray(0, h.ctM);
  const ctT = ciphertext.subarray(h.ctM);
  const ssM = kemDecapsulate(m.privateKey, ctM);
  let ssT: Buffer;
  try {
    // Only the uncompressed SEC1 form is a NIST group element here (65 bytes could also be a
    // "hybrid" SEC1 form, which the drafts do not allow).
    if (h.group === 'ec' && ctT[0] !== 0x04) throw new Error('not an uncompressed point');
    // A NIST point is checked to be on the curve when it is read; one that is not fails here.
    ssT = diffieHellman({
      privateKey: t.privateKey,
      publicKey: createPublicKey({
        key: ctT,
        format: 'raw-public',
        asymmetricKeyType: h.group,
        ...(h.curve ? { namedCurve: h.curve } : {}),
      }),
    });
  } catch (cause) {
    throw problem('decryption_failed', 'decryption failed', { cause });
  }
  return combine(h, ssM, ssT, ctT, elementBytes(t.publicKey));
}
