/**
 * Sign and verify in the manner of AWS KMS Sign/Verify: the caller sends the message (`data`) or
 * its digest (`digest`), the algorithm follows from the key (optionally chosen among the key's
 * algorithms), and data-mode signatures are exactly the JWS signature of RFC 7515 over `data`.
 *
 *   RSA       RS256 (default), RS384, RS512, PS256, PS384, PS512 (PSS salt = hash length)
 *   RSA-PSS   PS256 (default), PS384, PS512; only the PS* of its parameters' hash when they name one
 *   EC        ES256 / ES384 / ES512 by curve, IEEE P1363 r||s of 64 / 96 / 132 bytes
 *   Ed25519   EdDSA (pure: no digest mode)
 *   Ed448     EdDSA (pure: no digest mode)
 *   ML-DSA    ML-DSA-44/65/87 (FIPS 204, pure, empty context: no digest mode)
 *   SLH-DSA   SLH-DSA-* (FIPS 205, pure, empty context: no digest mode)
 *
 * Digest mode: the digest must have the algorithm's hash length; RSA and ECDSA sign it as the
 * hash of the message (rsa-digest.ts, ecdsa-digest.ts), so a digest-mode signature verifies in
 * data mode over the message and the other way round. Pure schemes sign the message itself, so
 * a digest gets 422: signing a digest with them would be a signature over different bytes.
 */
import { constants, sign as nodeSign, verify as nodeVerify } from 'node:crypto';
import type { KeyObject, SignKeyObjectInput, VerifyKeyObjectInput } from 'node:crypto';
import { promisify } from 'node:util';
import { problem } from '../errors/index.ts';
import { SIGNATURE_ALGORITHM_ALIASES, assertUsage, signatureAlgorithmSpec } from './registry.ts';
import type { KeyUsage, SignatureAlgorithm, SignatureAlgorithmSpec } from './registry.ts';
import type { LoadedKey } from './material.ts';
import {
  HASH_LENGTH,
  pkcs1SignDigest,
  pkcs1VerifyDigest,
  pssSignDigest,
  pssVerifyDigest,
} from './rsa-digest.ts';
import { ecdsaSignDigest, ecdsaVerifyDigest } from './ecdsa-digest.ts';
import { keySignatureAlgorithms } from './rsa-pss.ts';
import { curveSize, type JoseCurve } from './ecdh-es.ts';
import { derToP1363 } from './ecdsa-signature.ts';

/** What is signed: the message itself, or the digest of it the caller computed. */
export type SignInput = { data: Buffer; digest?: undefined } | { digest: Buffer; data?: undefined };

/** A key that knows its usage (a LoadedKeyVersion is one). */
export type SigningKey = LoadedKey & {
  readonly usage: KeyUsage;
  readonly usages?: readonly KeyUsage[];
  readonly kid?: string;
};

/**
 * The usage check of a verification: a key enabled to verify only (an outside signer's public
 * key, imported from a certificate or a public JWK) verifies as a signing key does.
 */
export function assertVerifies(key: {
  type: SigningKey['type'];
  usage: KeyUsage;
  usages?: readonly KeyUsage[];
  kid?: string;
}): void {
  assertUsage(key, (key.usages ?? [key.usage]).includes('verify') ? 'verify' : 'sign');
}

/** A signature and the JOSE name of the algorithm that made it. */
export interface SignatureResult {
  signature: Buffer;
  algorithm: SignatureAlgorithm;
}

interface Plan {
  algorithm: SignatureAlgorithm;
  spec: SignatureAlgorithmSpec;
  mode: 'data' | 'digest';
  bytes: Buffer;
}

/** The key's algorithm: the requested one (JOSE or AWS KMS name) if the key allows it, else its default. */
export function resolveSignatureAlgorithm(
  key: SigningKey,
  requested?: string,
  verifying = false,
): SignatureAlgorithm {
  if (verifying) assertVerifies(key);
  else assertUsage(key, 'sign');
  const allowed = keySignatureAlgorithms(key.privateKey ?? key.publicKey, key.spec.jws ?? []);
  if (requested === undefined) return allowed[0];
  if (typeof requested !== 'string')
    throw problem('validation_failed', 'the signing algorithm is a string');
  const name = Object.hasOwn(SIGNATURE_ALGORITHM_ALIASES, requested)
    ? SIGNATURE_ALGORITHM_ALIASES[requested]
    : requested;
  if (!signatureAlgorithmSpec(name))
    throw problem('validation_failed', `unknown signing algorithm ${requested}`);
  // The Ed25519 spellings (AWS's, RFC 9864's) name EdDSA by an Ed25519 key, not by an Ed448 one.
  const ed25519Only = name === 'EdDSA' && requested !== 'EdDSA';
  if (
    !(allowed as readonly string[]).includes(name) ||
    (ed25519Only && key.spec.nodeKeyType !== 'ed25519')
  ) {
    throw problem('unprocessable', `a ${key.type} key does not sign with ${requested}`, {
      details: { allowed: [...allowed] },
    });
  }
  return name as SignatureAlgorithm;
}

function plan(key: SigningKey, input: SignInput, requested?: string, verifying = false): Plan {
  const algorithm = resolveSignatureAlgorithm(key, requested, verifying);
  const spec = signatureAlgorithmSpec(algorithm)!;
  const hasData = input?.data !== undefined;
  const hasDigest = input?.digest !== undefined;
  if (hasData === hasDigest)
    throw problem('validation_failed', 'send exactly one of data and digest');
  const bytes = (hasData ? input.data : input.digest)!;
  if (!(bytes instanceof Uint8Array))
    throw problem('validation_failed', 'data and digest are bytes');
  if (hasData)
    return {
      algorithm,
      spec,
      mode: 'data',
      bytes: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength),
    };
  if (spec.hash === null) {
    throw problem(
      'unprocessable',
      `${algorithm} signs the message itself; send data, not a digest`,
      { details: { algorithm } },
    );
  }
  if (bytes.length !== HASH_LENGTH[spec.hash]) {
    throw problem('validation_failed', `a ${algorithm} digest is ${HASH_LENGTH[spec.hash]} bytes`, {
      details: { algorithm },
    });
  }
  return {
    algorithm,
    spec,
    mode: 'digest',
    bytes: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength),
  };
}

/** The node:crypto key options of a data-mode signature (RFC 7518 section 3). */
function keyOptions<K>(
  spec: SignatureAlgorithmSpec,
  key: K,
): { key: K; padding?: number; saltLength?: number; dsaEncoding?: 'ieee-p1363' } {
  if (spec.family === 'rsa') {
    return spec.padding === 'pss'
      ? {
          key,
          padding: constants.RSA_PKCS1_PSS_PADDING,
          saltLength: constants.RSA_PSS_SALTLEN_DIGEST,
        }
      : { key, padding: constants.RSA_PKCS1_PADDING };
  }
  if (spec.family === 'ec') return { key, dsaEncoding: 'ieee-p1363' };
  return { key };
}

/**
 * What crypto.sign is given for a data-mode signature: the bare KeyObject wherever OpenSSL's
 * defaults already are the JOSE algorithm (PKCS#1 v1.5, ECDSA in DER converted afterwards,
 * EdDSA, ML-DSA, SLH-DSA), since an options object costs more than an ES256 signature's
 * arithmetic on Node's side; the options only for PSS.
 */
function signingKey(spec: SignatureAlgorithmSpec, key: KeyObject): KeyObject | SignKeyObjectInput {
  return spec.family === 'rsa' && spec.padding === 'pss'
    ? (keyOptions(spec, key) as SignKeyObjectInput)
    : key;
}

/** The JOSE form of what crypto.sign returned for `signingKey`. */
function joseSignature(key: SigningKey, spec: SignatureAlgorithmSpec, signature: Buffer): Buffer {
  return spec.family === 'ec'
    ? derToP1363(signature, curveSize(key.spec.curve as JoseCurve))
    : signature;
}

function privateKeyOf(key: SigningKey): KeyObject {
  if (!key.privateKey)
    throw problem(
      'unprocessable',
      `key ${key.kid ?? key.type} holds no private key and can only verify`,
    );
  return key.privateKey;
}

function signDigest(key: SigningKey, p: Plan): Buffer {
  const hash = p.spec.hash!;
  const privateKey = privateKeyOf(key);
  if (p.spec.family === 'ec')
    return ecdsaSignDigest(privateKey, key.spec.curve as JoseCurve, p.bytes);
  return p.spec.padding === 'pss'
    ? pssSignDigest(privateKey, hash, p.bytes)
    : pkcs1SignDigest(privateKey, hash, p.bytes);
}

function verifyDigest(key: SigningKey, p: Plan, signature: Buffer): boolean {
  const hash = p.spec.hash!;
  const publicKey = key.publicKey!;
  if (p.spec.family === 'ec')
    return ecdsaVerifyDigest(publicKey, key.spec.curve as JoseCurve, p.bytes, signature);
  return p.spec.padding === 'pss'
    ? pssVerifyDigest(publicKey, hash, p.bytes, signature)
    : pkcs1VerifyDigest(publicKey, hash, p.bytes, signature);
}

/** Signs data or a digest with a signing key; the result names the algorithm used. */
export function signMessage(
  key: SigningKey,
  input: SignInput,
  algorithm?: string,
): SignatureResult {
  const p = plan(key, input, algorithm);
  if (p.mode === 'digest') return { signature: signDigest(key, p), algorithm: p.algorithm };
  const signature = nodeSign(p.spec.hash, p.bytes, signingKey(p.spec, privateKeyOf(key)));
  return { signature: joseSignature(key, p.spec, signature), algorithm: p.algorithm };
}

/** True when `signature` is a valid signature of data or a digest by the key; malformed signatures are false, not errors. */
export function verifyMessage(
  key: SigningKey,
  input: SignInput,
  signature: Buffer,
  algorithm?: string,
): boolean {
  const p = plan(key, input, algorithm, true);
  if (!(signature instanceof Uint8Array))
    throw problem('validation_failed', 'the signature is bytes');
  const sig = Buffer.from(signature.buffer, signature.byteOffset, signature.byteLength);
  try {
    if (p.mode === 'digest') return verifyDigest(key, p, sig);
    return nodeVerify(
      p.spec.hash,
      p.bytes,
      keyOptions(p.spec, key.publicKey!) as VerifyKeyObjectInput,
      sig,
    );
  } catch {
    return false;
  }
}

const signAsync = promisify(nodeSign) as (
  alg: string | null,
  data: Buffer,
  key: KeyObject | SignKeyObjectInput,
) => Promise<Buffer>;
const verifyAsync = promisify(nodeVerify) as (
  alg: string | null,
  data: Buffer,
  key: VerifyKeyObjectInput,
  sig: Buffer,
) => Promise<boolean>;

/**
 * signMessage on libuv's thread pool: data-mode signatures use crypto.sign's callback form, which
 * keeps RSA private operations and ML-DSA/SLH-DSA off the event loop without a worker round trip.
 * Digest mode runs inline (Node has no asynchronous privateEncrypt).
 */
export async function signMessageAsync(
  key: SigningKey,
  input: SignInput,
  algorithm?: string,
): Promise<SignatureResult> {
  const p = plan(key, input, algorithm);
  if (p.mode === 'digest') return { signature: signDigest(key, p), algorithm: p.algorithm };
  const signature = await signAsync(p.spec.hash, p.bytes, signingKey(p.spec, privateKeyOf(key)));
  return { signature: joseSignature(key, p.spec, signature), algorithm: p.algorithm };
}

/** verifyMessage on libuv's thread pool for data mode (SLH-DSA verification takes milliseconds). */
export async function verifyMessageAsync(
  key: SigningKey,
  input: SignInput,
  signature: Buffer,
  algorithm?: string,
): Promise<boolean> {
  const p = plan(key, input, algorithm, true);
  if (p.mode === 'digest') return verifyMessage(key, input, signature, algorithm);
  try {
    return await verifyAsync(
      p.spec.hash,
      p.bytes,
      keyOptions(p.spec, key.publicKey!) as VerifyKeyObjectInput,
      signature,
    );
  } catch {
    return false;
  }
}
