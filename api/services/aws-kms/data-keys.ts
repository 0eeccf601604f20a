/**
 * The AWS KMS operations that make key material: GenerateDataKey and GenerateDataKeyPair (with
 * and without the plaintext), sealed under a KeyId as Encrypt seals (data-plane.ts), and
 * GenerateRandom. A key pair is expensive work: its own pool and the caller's budget.
 */
import { randomBytes } from 'node:crypto';
import type { AppContext } from '../../context.ts';
import { seal } from '../crypto/runtime.ts';
import { AwsError } from './errors.ts';
import { keyArn, type AwsCaller } from './ids.ts';
import { WORK_COSTS } from '../../../shared/keys/work-budget.ts';
import type { DataKeyPairRequest } from '../../threads/tasks/expensive.ts';
import { b64, contextOf, key, type Answer, type Input } from './data-plane.ts';

const DATA_KEY_BYTES = new Map<unknown, number>([
  ['AES_256', 32],
  ['AES_128', 16],
]);

/** The size of a data key: KeySpec or NumberOfBytes (1 to 1024), exactly one. */
function dataKeyBytes(input: Input): number {
  if ((input.KeySpec === undefined) === (input.NumberOfBytes === undefined))
    throw new AwsError('ValidationException', 'Specify exactly one of KeySpec and NumberOfBytes');
  if (input.KeySpec !== undefined) {
    const n = DATA_KEY_BYTES.get(input.KeySpec);
    if (n === undefined)
      throw new AwsError('ValidationException', 'KeySpec must be AES_256 or AES_128');
    return n;
  }
  return count(input.NumberOfBytes, 'NumberOfBytes');
}

function count(v: unknown, field: string): number {
  if (!Number.isSafeInteger(v) || (v as number) < 1 || (v as number) > 1024)
    throw new AwsError('ValidationException', `${field} must be an integer from 1 to 1024`);
  return v as number;
}

/** GenerateDataKey: a fresh key, in the clear and sealed under KeyId. */
export async function generateDataKey(ctx: AppContext, c: AwsCaller, input: Input): Answer {
  const size = dataKeyBytes(input);
  const context = contextOf(ctx, input, 'EncryptionContext');
  const k = await key(ctx, c, input);
  const plaintext = randomBytes(size);
  try {
    const sealed = await seal(ctx, k, plaintext, context, 'blob');
    return {
      kid: sealed.kid,
      CiphertextBlob: sealed.ciphertext,
      Plaintext: b64(plaintext),
      KeyId: keyArn(c, sealed.kid),
    };
  } finally {
    plaintext.fill(0);
  }
}

/** GenerateDataKeyWithoutPlaintext: as GenerateDataKey, the sealed key only. */
export async function generateDataKeyWithoutPlaintext(
  ctx: AppContext,
  c: AwsCaller,
  input: Input,
): Answer {
  const { Plaintext: _dropped, ...rest } = await generateDataKey(ctx, c, input);
  return rest;
}

const PAIR_SPECS = new Map<unknown, DataKeyPairRequest>([
  ['RSA_2048', { type: 'rsa', size: 2048 }],
  ['RSA_3072', { type: 'rsa', size: 3072 }],
  ['RSA_4096', { type: 'rsa', size: 4096 }],
  ['ECC_NIST_P256', { type: 'ec', size: 'P-256' }],
  ['ECC_NIST_P384', { type: 'ec', size: 'P-384' }],
  ['ECC_NIST_P521', { type: 'ec', size: 'P-521' }],
  ['ECC_SECG_P256K1', { type: 'ec', size: 'secp256k1' }],
]);

/** GenerateDataKeyPair: a fresh RSA or EC pair (PKCS#8 and SPKI DER), the private key sealed under KeyId. */
export async function generateDataKeyPair(
  ctx: AppContext,
  c: AwsCaller,
  input: Input,
  actor: string,
): Answer {
  const spec = PAIR_SPECS.get(input.KeyPairSpec);
  if (!spec)
    throw new AwsError(
      'ValidationException',
      `KeyPairSpec must be one of ${[...PAIR_SPECS.keys()].join(', ')}`,
    );
  const context = contextOf(ctx, input, 'EncryptionContext');
  const k = await key(ctx, c, input);
  // Expensive work (RSA-4096 takes up to seconds): its own pool and the caller's budget, never
  // the event loop or the libuv threads that sign (docs/expensive-work.md).
  const pair = await ctx.expensive.run<{ privateKey: Uint8Array; publicKey: Uint8Array }>(
    'generateDataKeyPairTask',
    spec,
    {
      principal: actor,
      kind: 'key-generation',
      cost: spec.type === 'rsa' ? WORK_COSTS.rsa(spec.size as number) : WORK_COSTS.ec,
      abandoned: c.abandoned,
    },
  );
  const privateDer = Buffer.from(
    pair.privateKey.buffer,
    pair.privateKey.byteOffset,
    pair.privateKey.byteLength,
  );
  try {
    const sealed = await seal(ctx, k, privateDer, context, 'blob');
    return {
      kid: sealed.kid,
      PrivateKeyCiphertextBlob: sealed.ciphertext,
      PrivateKeyPlaintext: b64(privateDer),
      PublicKey: b64(Buffer.from(pair.publicKey)),
      KeyId: keyArn(c, sealed.kid),
      KeyPairSpec: input.KeyPairSpec,
    };
  } finally {
    privateDer.fill(0);
  }
}

/** GenerateDataKeyPairWithoutPlaintext: the public key and the sealed private key. */
export async function generateDataKeyPairWithoutPlaintext(
  ctx: AppContext,
  c: AwsCaller,
  input: Input,
  actor: string,
): Answer {
  const { PrivateKeyPlaintext: _dropped, ...rest } = await generateDataKeyPair(
    ctx,
    c,
    input,
    actor,
  );
  return rest;
}

/** GenerateRandom: `{NumberOfBytes}` → `{Plaintext}`. */
export async function generateRandom(_ctx: AppContext, _c: AwsCaller, input: Input): Answer {
  return { Plaintext: b64(randomBytes(count(input.NumberOfBytes, 'NumberOfBytes'))) };
}
