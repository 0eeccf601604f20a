/**
 * HPKE base mode (draft-ietf-hpke-hpke, the revision of RFC 9180) for the post-quantum KEMs of
 * draft-ietf-hpke-pq, with the one-stage SHAKE256 KDF and AES-256-GCM that
 * draft-ietf-jose-hpke-pq-pqt registers for JOSE:
 *
 *   LabeledDerive(ikm, label, ctx, L) = SHAKE256(ikm || "HPKE-v1" || suite_id || lengthPrefixed(label) || I2OSP(L, 2) || ctx, L)
 *   suite_id = "HPKE" || I2OSP(kem_id, 2) || I2OSP(kdf_id, 2) || I2OSP(aead_id, 2)
 *   secret   = LabeledDerive(lengthPrefixed(psk) || lengthPrefixed(shared_secret), "secret",
 *                            mode || lengthPrefixed(psk_id) || lengthPrefixed(info), Nk + Nn + Nh)
 *   key = secret[0:Nk], base_nonce = secret[Nk:Nk+Nn]   (CombineSecrets_OneStage; psk = psk_id = "")
 *
 * The version label is "HPKE-v1" as in RFC 9180 (an editor's copy of the draft spelled it
 * "HPKE_v1"; the JOSE drafts' published vectors, which the tests decrypt, use "HPKE-v1"), and
 * SHAKE256's Nh is 64, which the vectors fix too (it is in I2OSP(L, 2)).
 *
 * The KEMs are ML-KEM-768/1024 (the KEM's ciphertext is `enc`, its secret the shared secret) and
 * the hybrids MLKEM768-X25519 (X-Wing), MLKEM768-P256 and MLKEM1024-P384, all in pqc.ts. Only the first message of a context is used (sequence 0, nonce =
 * base_nonce), which is all JOSE asks. The tests check the drafts' published vectors and open our
 * output with an independent implementation.
 */
import { createCipheriv, createDecipheriv, createHash } from 'node:crypto';
import { asSecretKey } from './secret-key.ts';
import type { CipherGCM, DecipherGCM } from 'node:crypto';
import { decryptionFailed, problem } from '../errors/index.ts';
import { HPKE_SUITES, hpkeSuiteOf } from '../jose/pq-identifiers.ts';
import type { HpkeSuiteLabels } from '../jose/pq-identifiers.ts';
import { decapsulate, encapsulate } from './pqc.ts';
import type { LoadedKey } from './key-material.ts';

const NK = 32; // AES-256-GCM key
const NN = 12; // its nonce
const NT = 16; // its tag
const NH = 64; // SHAKE256's Nh (draft-ietf-hpke-pq)
const MODE_BASE = 0x00;

function i2osp(n: number, w: number): Buffer {
  const b = Buffer.alloc(w);
  b.writeUIntBE(n, 0, w);
  return b;
}

function lengthPrefixed(x: Buffer): Buffer {
  if (x.length > 0xffff) throw problem('validation_failed', 'an HPKE input is over 65535 bytes');
  return Buffer.concat([i2osp(x.length, 2), x]);
}

function suiteId(s: HpkeSuiteLabels): Buffer {
  return Buffer.concat([
    Buffer.from('HPKE'),
    i2osp(s.kemId, 2),
    i2osp(s.kdfId, 2),
    i2osp(s.aeadId, 2),
  ]);
}

function labeledDerive(
  s: HpkeSuiteLabels,
  ikm: Buffer,
  label: string,
  context: Buffer,
  length: number,
): Buffer {
  return createHash('shake256', { outputLength: length })
    .update(ikm)
    .update('HPKE-v1')
    .update(suiteId(s))
    .update(lengthPrefixed(Buffer.from(label)))
    .update(i2osp(length, 2))
    .update(context)
    .digest();
}

/** The AEAD key and nonce of the first message of a base-mode context. */
export interface HpkeContext {
  readonly key: Buffer;
  readonly nonce: Buffer;
}

/** KeySchedule(mode_base, shared_secret, info) with the one-stage KDF. */
export function keySchedule(s: HpkeSuiteLabels, sharedSecret: Buffer, info: Buffer): HpkeContext {
  const secrets = Buffer.concat([lengthPrefixed(Buffer.alloc(0)), lengthPrefixed(sharedSecret)]);
  const context = Buffer.concat([
    i2osp(MODE_BASE, 1),
    lengthPrefixed(Buffer.alloc(0)),
    lengthPrefixed(info),
  ]);
  const secret = labeledDerive(s, secrets, 'secret', context, NK + NN + NH);
  return { key: secret.subarray(0, NK), nonce: secret.subarray(NK, NK + NN) };
}

/** The HPKE suite of a KEM key, or key-usage-mismatch for a key that receives no HPKE. */
export function hpkeSuite(key: Pick<LoadedKey, 'type'>): HpkeSuiteLabels {
  const s = hpkeSuiteOf(key.type);
  if (!s)
    throw problem('key_usage_mismatch', `a ${key.type} key receives no HPKE encryption`, {
      details: { allowed: [...HPKE_SUITES.keys()] },
    });
  return s;
}

/** SetupBaseS: a fresh encapsulation to the key and the context it keys. */
export function setupSender(key: LoadedKey, info: Buffer): { enc: Buffer; ctx: HpkeContext } {
  const s = hpkeSuite(key);
  const { ciphertext, sharedSecret } = encapsulate(key);
  return { enc: ciphertext, ctx: keySchedule(s, sharedSecret, info) };
}

/**
 * SetupBaseR. An `enc` of the wrong length or a group share without a secret is the opaque
 * decryption-failed; ML-KEM's implicit rejection gives a wrong key, which fails at the tag.
 */
export function setupRecipient(key: LoadedKey, enc: Buffer, info: Buffer): HpkeContext {
  const s = hpkeSuite(key);
  let shared: Buffer;
  try {
    shared = decapsulate(key, enc);
  } catch (cause) {
    throw decryptionFailed(cause);
  }
  return keySchedule(s, shared, info);
}

/** A streaming AES-256-GCM sealer under an HPKE context: HPKE's ciphertext is C || tag. */
export function contextCipher(ctx: HpkeContext, aad: Buffer): CipherGCM {
  return (createCipheriv('aes-256-gcm', asSecretKey(ctx.key), ctx.nonce) as CipherGCM).setAAD(aad);
}

/** The streaming opener; the caller sets the last NT bytes as the tag before final(). */
export function contextDecipher(ctx: HpkeContext, aad: Buffer): DecipherGCM {
  return (createDecipheriv('aes-256-gcm', asSecretKey(ctx.key), ctx.nonce) as DecipherGCM).setAAD(
    aad,
  );
}

/** Single-shot Seal (base mode): `enc` and `ct` (ciphertext || tag). */
export function seal(
  key: LoadedKey,
  info: Buffer,
  aad: Buffer,
  plaintext: Buffer,
): { enc: Buffer; ct: Buffer } {
  const { enc, ctx } = setupSender(key, info);
  const c = contextCipher(ctx, aad);
  const body = Buffer.concat([c.update(plaintext), c.final()]);
  return { enc, ct: Buffer.concat([body, c.getAuthTag()]) };
}

/** Single-shot Open (base mode); every failure is the one decryption-failed. */
export function open(key: LoadedKey, enc: Buffer, info: Buffer, aad: Buffer, ct: Buffer): Buffer {
  const ctx = setupRecipient(key, enc, info);
  if (ct.length < NT) throw decryptionFailed(new Error('HPKE ciphertext shorter than its tag'));
  const d = contextDecipher(ctx, aad);
  d.setAuthTag(ct.subarray(ct.length - NT));
  try {
    return Buffer.concat([d.update(ct.subarray(0, ct.length - NT)), d.final()]);
  } catch (cause) {
    throw decryptionFailed(cause);
  }
}
