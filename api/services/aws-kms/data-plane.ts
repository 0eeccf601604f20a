/**
 * The AWS KMS data plane over the runtime's own seal and unseal, sign, verify and
 * MAC: the JWE, the context binding (contextDigest: HMAC of the JSON of the sorted pairs, so
 * `{"ab":"c"}` and `{"a":"bc"}` differ), the key states and the decryption-failure budget are the
 * Core API's. Each operation answers the AWS members plus `kid` (the audit target, dropped before
 * the answer is written).
 *
 * CiphertextBlob is Keyward's own ciphertext blob (shared/jose/ciphertext-blob.ts): the compact
 * JWE, whose protected header names `<kid>#<version>` and binds the context digest, in binary
 * form. Decrypt needs no KeyId; every failure to open one is the same InvalidCiphertextException.
 */
import type { AppContext } from '../../context.ts';
import { AppError } from '../../../shared/errors/index.ts';
import { decodeBase64 } from '../../../shared/base64.ts';
import { parseCompact } from '../../../shared/jose/compact-jwe.ts';
import { fromBlob } from '../../../shared/jose/ciphertext-blob.ts';
import { keyTypeSpec } from '../../../shared/crypto/registry.ts';
import { derToP1363, p1363ToDer } from '../../../shared/crypto/ecdsa-signature.ts';
import { encryptionContext, seal, unseal, operationKey } from '../crypto/runtime.ts';
import { sign, verify } from '../crypto/signing.ts';
import { generateMac, verifyMac } from '../crypto/mac.ts';
import { AwsError, invalidCiphertext } from './errors.ts';
import { keyArn, resolveKeyId, type AwsCaller } from './ids.ts';
import { algorithmsOf, awsSigningAlgorithm } from './specs.ts';

export type Input = Record<string, unknown>;
export type Answer = Promise<Record<string, unknown>>;

/** AWS KMS's CiphertextBlob bound; our JWE is longer than AWS's blob, so the bound is ours. */
const MAX_BLOB_BYTES = 16_384;
const MAX_PLAINTEXT_BYTES = 4096;

/** A base64 member as bytes, within `max` bytes; ValidationException naming it otherwise. */
export function blob(
  input: Input,
  field: string,
  max: number,
  required = true,
): Buffer | undefined {
  const v = input[field];
  if (v === undefined && !required) return undefined;
  const bytes = typeof v === 'string' ? decodeBase64(v, 'standard') : undefined;
  if (!bytes) throw new AwsError('ValidationException', `${field} must be a base64-encoded blob`);
  if (bytes.length === 0 || bytes.length > max)
    throw new AwsError('ValidationException', `${field} must be 1 to ${max} bytes`);
  return bytes;
}

export const b64 = (b: Buffer) => b.toString('base64');

/** The compact JWE inside a CiphertextBlob; InvalidCiphertextException for anything else. */
function jweOf(bytes: Buffer): string {
  const jwe = fromBlob(bytes);
  if (jwe === null) throw invalidCiphertext();
  return jwe;
}

/** The context digest of an EncryptionContext member (a string map), or undefined. */
export const contextOf = (ctx: AppContext, input: Input, field: string) => {
  try {
    return encryptionContext(ctx, input[field], field);
  } catch (err) {
    throw new AwsError('ValidationException', (err as Error).message);
  }
};

/** Opens a blob of the tenant: any failure but a key state or an exhausted budget is InvalidCiphertext. */
async function open(
  ctx: AppContext,
  c: AwsCaller,
  input: Input,
  keyIdField: string,
  contextField: string,
) {
  const jwe = jweOf(blob(input, 'CiphertextBlob', MAX_BLOB_BYTES)!);
  const context = contextOf(ctx, input, contextField);
  if (input[keyIdField] !== undefined) {
    const named = await resolveKeyId(ctx, c, input[keyIdField]);
    let kid: string;
    try {
      kid = parseCompact(jwe).kid;
    } catch {
      throw invalidCiphertext();
    }
    if (kid !== named)
      throw new AwsError(
        'IncorrectKeyException',
        'The key ID in the request does not identify a KMS key that can perform this operation.',
      );
  }
  try {
    return await unseal(ctx, c.tenantId, jwe, context);
  } catch (err) {
    if (
      err instanceof AppError &&
      [
        'key_suspended',
        'key_pending_deletion',
        'key_revoked',
        'rate_limited',
        'pool_busy',
        'unavailable',
      ].includes(err.code)
    )
      throw err;
    if (err instanceof AppError && err.status >= 500) throw err;
    throw invalidCiphertext();
  }
}

/** The encryption algorithm named (SYMMETRIC_DEFAULT when absent, as AWS), one AWS serves. */
function encryptionAlgorithm(input: Input, field = 'EncryptionAlgorithm'): string {
  const v = input[field] ?? 'SYMMETRIC_DEFAULT';
  if (v !== 'SYMMETRIC_DEFAULT' && v !== 'RSAES_OAEP_SHA_256')
    throw new AwsError(
      'ValidationException',
      `${field} must be SYMMETRIC_DEFAULT or RSAES_OAEP_SHA_256`,
    );
  return v;
}

/** True when the key encrypts with the algorithm (the list DescribeKey shows for it). */
const keyEncryptsWith = (k: { type: string; usage: string }, algorithm: string): boolean =>
  algorithmsOf(k.type, k.usage).EncryptionAlgorithms?.includes(algorithm) ?? false;

/**
 * The algorithm to encrypt with under `k`: as AWS, InvalidKeyUsageException when the key's
 * KeySpec does not encrypt with it (an AES key asked for RSAES_OAEP_SHA_256, an RSA key with
 * SYMMETRIC_DEFAULT, which is also the default).
 */
function sealingAlgorithm(k: { kid: string; type: string; usage: string }, algorithm: string) {
  if (!keyEncryptsWith(k, algorithm))
    throw new AwsError(
      'InvalidKeyUsageException',
      `The key ${k.kid} does not encrypt with ${algorithm}; DescribeKey lists its EncryptionAlgorithms.`,
    );
  return algorithm;
}

/** The key the member `field` names (KeyId by default), for an operation of the caller's tenant. */
export async function key(ctx: AppContext, c: AwsCaller, input: Input, field = 'KeyId') {
  return operationKey(ctx, c.tenantId, await resolveKeyId(ctx, c, input[field]));
}

/** Encrypt: `{KeyId, Plaintext, EncryptionContext?}` → `{CiphertextBlob, KeyId, EncryptionAlgorithm}`. */
export async function encrypt(ctx: AppContext, c: AwsCaller, input: Input): Answer {
  const named = encryptionAlgorithm(input);
  const plaintext = blob(input, 'Plaintext', MAX_PLAINTEXT_BYTES)!;
  const context = contextOf(ctx, input, 'EncryptionContext');
  const k = await key(ctx, c, input);
  const algorithm = sealingAlgorithm(k, named);
  const sealed = await seal(ctx, k, plaintext, context, 'blob');
  return {
    kid: sealed.kid,
    CiphertextBlob: sealed.ciphertext,
    KeyId: keyArn(c, sealed.kid),
    EncryptionAlgorithm: algorithm,
  };
}

/** Decrypt: `{CiphertextBlob, EncryptionContext?, KeyId?}` → `{KeyId, Plaintext, EncryptionAlgorithm}`. */
export async function decrypt(ctx: AppContext, c: AwsCaller, input: Input): Answer {
  const algorithm = encryptionAlgorithm(input);
  const { key: k, plaintext } = await open(ctx, c, input, 'KeyId', 'EncryptionContext');
  try {
    // A blob opened under another algorithm than the one named fails as AWS's Decrypt does,
    // with the one answer of every failed decryption (no hint of why).
    if (!keyEncryptsWith(k, algorithm)) throw invalidCiphertext();
    return {
      kid: k.kid,
      KeyId: keyArn(c, k.kid),
      Plaintext: b64(plaintext),
      EncryptionAlgorithm: algorithm,
    };
  } finally {
    plaintext.fill(0);
  }
}

/** ReEncrypt: opens under the source context, seals to DestinationKeyId under the destination context. */
export async function reEncrypt(ctx: AppContext, c: AwsCaller, input: Input): Answer {
  const sourceAlgorithm = encryptionAlgorithm(input, 'SourceEncryptionAlgorithm');
  const namedDestination = encryptionAlgorithm(input, 'DestinationEncryptionAlgorithm');
  const destination = await key(ctx, c, input, 'DestinationKeyId');
  const destinationAlgorithm = sealingAlgorithm(destination, namedDestination);
  const context = contextOf(ctx, input, 'DestinationEncryptionContext');
  const source = await open(ctx, c, input, 'SourceKeyId', 'SourceEncryptionContext');
  try {
    if (!keyEncryptsWith(source.key, sourceAlgorithm)) throw invalidCiphertext();
    const sealed = await seal(ctx, destination, source.plaintext, context, 'blob');
    return {
      kid: sealed.kid,
      CiphertextBlob: sealed.ciphertext,
      SourceKeyId: keyArn(c, source.key.kid),
      KeyId: keyArn(c, sealed.kid),
      SourceEncryptionAlgorithm: sourceAlgorithm,
      DestinationEncryptionAlgorithm: destinationAlgorithm,
    };
  } finally {
    source.plaintext.fill(0);
  }
}

/** The MacAlgorithm named, which must be the key's (HMAC_SHA_<bits>). */
function macAlgorithmOf(type: string, input: Input): string {
  const spec = keyTypeSpec(type);
  const name = `HMAC_SHA_${spec.bits}`;
  if (spec.family !== 'hmac')
    throw new AwsError(
      'InvalidKeyUsageException',
      'The key is not an HMAC key; its usage is not GENERATE_VERIFY_MAC',
    );
  if (input.MacAlgorithm !== name)
    throw new AwsError('InvalidKeyUsageException', `The key's MAC algorithm is ${name}`);
  return name;
}

/** GenerateMac: `{KeyId, Message, MacAlgorithm}` → `{Mac, MacAlgorithm, KeyId}`. */
export async function generateMacOp(ctx: AppContext, c: AwsCaller, input: Input): Answer {
  const message = blob(input, 'Message', MAX_PLAINTEXT_BYTES)!;
  const k = await key(ctx, c, input);
  const algorithm = macAlgorithmOf(k.type, input);
  const r = await generateMac(ctx, c.tenantId, { kid: k.kid, data: b64(message) });
  return { kid: k.kid, Mac: r.mac, MacAlgorithm: algorithm, KeyId: keyArn(c, k.kid) };
}

/** VerifyMac: `{MacValid: true}` or KMSInvalidMacException. */
export async function verifyMacOp(ctx: AppContext, c: AwsCaller, input: Input): Answer {
  const message = blob(input, 'Message', MAX_PLAINTEXT_BYTES)!;
  const mac = blob(input, 'Mac', 64)!;
  const k = await key(ctx, c, input);
  const algorithm = macAlgorithmOf(k.type, input);
  const invalidMac = new AwsError('KMSInvalidMacException', 'The MAC does not verify.');
  let valid = false;
  try {
    valid = Boolean(
      (await verifyMac(ctx, c.tenantId, { kid: k.kid, data: b64(message), mac: b64(mac) })).valid,
    );
  } catch (err) {
    if (err instanceof AppError && err.code === 'validation_failed') throw invalidMac;
    throw err;
  }
  if (!valid) throw invalidMac;
  return { kid: k.kid, KeyId: keyArn(c, k.kid), MacValid: true, MacAlgorithm: algorithm };
}

/** The signed input: RAW (at most 4096 bytes) or DIGEST. */
function signedInput(input: Input): Record<string, string> {
  const message = blob(input, 'Message', MAX_PLAINTEXT_BYTES)!;
  const type = input.MessageType ?? 'RAW';
  if (type === 'RAW') return { data: b64(message) };
  if (type === 'DIGEST') return { digest: b64(message) };
  throw new AwsError('ValidationException', 'MessageType must be RAW or DIGEST');
}

function signingAlgorithm(input: Input): string {
  if (typeof input.SigningAlgorithm !== 'string')
    throw new AwsError('ValidationException', 'SigningAlgorithm is required');
  return input.SigningAlgorithm;
}

const ecSize = (type: string) => Math.ceil(keyTypeSpec(type).bits / 8);

/** Sign: `{KeyId, Message, MessageType, SigningAlgorithm}` → `{KeyId, Signature, SigningAlgorithm}`. */
export async function signOp(ctx: AppContext, c: AwsCaller, input: Input): Answer {
  const algorithm = signingAlgorithm(input);
  const data = signedInput(input);
  const k = await key(ctx, c, input);
  const r = await sign(ctx, c.tenantId, { kid: k.kid, ...data, algorithm });
  let signature: Buffer = Buffer.from(r.signature, 'base64');
  if (keyTypeSpec(k.type).family === 'ec') signature = p1363ToDer(signature);
  return {
    kid: k.kid,
    KeyId: keyArn(c, k.kid),
    Signature: b64(signature),
    SigningAlgorithm: awsSigningAlgorithm(r.algorithm, k.type),
  };
}

/** Verify: `{SignatureValid: true}` or KMSInvalidSignatureException. */
export async function verifyOp(ctx: AppContext, c: AwsCaller, input: Input): Answer {
  const algorithm = signingAlgorithm(input);
  const data = signedInput(input);
  let signature: Buffer = blob(input, 'Signature', 8192)!;
  const k = await key(ctx, c, input);
  const invalidSignature = new AwsError(
    'KMSInvalidSignatureException',
    'The signature does not verify.',
  );
  if (keyTypeSpec(k.type).family === 'ec') {
    try {
      signature = derToP1363(signature, ecSize(k.type));
    } catch {
      throw invalidSignature;
    }
  }
  const r = await verify(ctx, c.tenantId, {
    kid: k.kid,
    ...data,
    signature: b64(signature),
    algorithm,
  });
  if (!r.valid) throw invalidSignature;
  return {
    kid: k.kid,
    KeyId: keyArn(c, k.kid),
    SignatureValid: true,
    SigningAlgorithm: awsSigningAlgorithm(
      // The JOSE name back to AWS's; the request's name when it already was AWS's.
      algorithm,
      k.type,
    ),
  };
}
