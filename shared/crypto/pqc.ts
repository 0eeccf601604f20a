/**
 * Key encapsulation: ML-KEM-768/1024 (FIPS 203) through Node 24's native crypto.encapsulate and
 * crypto.decapsulate, and the X25519 + ML-KEM-768 hybrid as X-Wing
 * (draft-connolly-cfrg-xwing-kem-06 to -10, unchanged since -06):
 *
 *   decapsulation key  sk = 32-byte seed; expanded = SHAKE256(sk, 96 bytes)
 *                      ML-KEM-768 key from seed d||z = expanded[0:64], X25519 secret sk_X = expanded[64:96]
 *   encapsulation key  pk = pk_M (1184) || pk_X (32)
 *   Encapsulate(pk)    ek_X random, ct_X = X25519(ek_X, 9), ss_X = X25519(ek_X, pk_X), (ss_M, ct_M) = ML-KEM.Encaps(pk_M)
 *                      ct = ct_M (1088) || ct_X (32)
 *   Combiner           ss = SHA3-256(ss_M || ss_X || ct_X || pk_X || "\.//^\")   (label 5c2e2f2f5e5c)
 *
 * ct_M is left out of the hash on purpose: X-Wing's proof relies on ML-KEM's ciphertext binding
 * (its Fujisaki-Okamoto transform), which is what lets our ciphertexts and keys interoperate with
 * any X-Wing implementation; the unit tests check the draft's test vectors. ML-DSA and SLH-DSA
 * signatures live in sign.ts.
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

const XWING_LABEL = Buffer.from('5c2e2f2f5e5c', 'hex');
const MLKEM768_CT = 1088;
const X25519_LEN = 32;
const CIPHERTEXT_LENGTH: Record<string, number> = {
  'ml-kem-768': 1088,
  'ml-kem-1024': 1568,
  'x25519-ml-kem-768': MLKEM768_CT + X25519_LEN,
};

function kemKey(
  key: LoadedKey & { usage?: KeyUsage; usages?: readonly KeyUsage[]; kid?: string },
): void {
  if (key.spec.family !== 'ml-kem' && key.spec.family !== 'hybrid') {
    throw problem('key_usage_mismatch', `a ${key.type} key cannot encapsulate`, {
      details: { allowed: ['ml-kem-768', 'ml-kem-1024', 'x25519-ml-kem-768'] },
    });
  }
  if (key.usage !== undefined)
    assertUsage({ type: key.type, usage: key.usage, usages: key.usages, kid: key.kid }, 'encrypt');
}

/** Expands an X-Wing seed into its ML-KEM-768 and X25519 private keys (expandDecapsulationKey). */
export function xwingExpandSeed(seed: Buffer): { mlKem: KeyObject; x25519: KeyObject } {
  if (seed.length !== 32) throw problem('validation_failed', 'an X-Wing seed is 32 bytes');
  const expanded = createHash('shake256', { outputLength: 96 }).update(seed).digest();
  return {
    mlKem: createPrivateKey({
      key: expanded.subarray(0, 64),
      format: 'raw-seed',
      asymmetricKeyType: 'ml-kem-768',
    }),
    x25519: createPrivateKey({
      key: expanded.subarray(64, 96),
      format: 'raw-private',
      asymmetricKeyType: 'x25519',
    }),
  };
}

/** The X-Wing encapsulation key pk_M || pk_X (1216 bytes) of a hybrid key. */
export function xwingPublicKey(key: LoadedKey): Buffer {
  const [m, x] = key.components!;
  return Buffer.concat([
    m.publicKey.export({ format: 'raw-public' }),
    x.publicKey.export({ format: 'raw-public' }),
  ]);
}

function combine(ssM: Buffer, ssX: Buffer, ctX: Buffer, pkX: Buffer): Buffer {
  return createHash('sha3-256')
    .update(ssM)
    .update(ssX)
    .update(ctX)
    .update(pkX)
    .update(XWING_LABEL)
    .digest();
}

/** Encapsulates a fresh shared secret to an ML-KEM or hybrid key; only the public key is needed. */
export function encapsulate(key: LoadedKey & { usage?: KeyUsage; kid?: string }): Encapsulation {
  kemKey(key);
  if (key.spec.family === 'ml-kem') {
    const { ciphertext, sharedKey } = kemEncapsulate(key.publicKey!);
    return { ciphertext, sharedSecret: sharedKey };
  }
  const [m, x] = key.components!;
  const { ciphertext: ctM, sharedKey: ssM } = kemEncapsulate(m.publicKey);
  const ephemeral = generateKeyPairSync('x25519');
  const ssX = diffieHellman({ privateKey: ephemeral.privateKey, publicKey: x.publicKey });
  const ctX = ephemeral.publicKey.export({ format: 'raw-public' });
  const pkX = x.publicKey.export({ format: 'raw-public' });
  return { ciphertext: Buffer.concat([ctM, ctX]), sharedSecret: combine(ssM, ssX, ctX, pkX) };
}

/**
 * Recovers the shared secret from a ciphertext. A ciphertext of the wrong length is a validation
 * failure; ML-KEM itself never fails (implicit rejection returns an unrelated secret), and an
 * X25519 share that yields no secret is the opaque decryption_failed.
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
  const [m, x] = key.components!;
  if (!m.privateKey || !x.privateKey)
    throw problem('key_usage_mismatch', 'the key has no private part');
  const ctM = ciphertext.subarray(0, MLKEM768_CT);
  const ctX = ciphertext.subarray(MLKEM768_CT);
  const ssM = kemDecapsulate(m.privateKey, ctM);
  let ssX: Buffer;
  try {
    ssX = diffieHellman({
      privateKey: x.privateKey,
      publicKey: createPublicKey({ key: ctX, format: 'raw-public', asymmetricKeyType: 'x25519' }),
    });
  } catch (cause) {
    throw problem('decryption_failed', 'decryption failed', { cause });
  }
  return combine(ssM, ssX, ctX, x.publicKey.export({ format: 'raw-public' }));
}
