/**
 * Piscina tasks for the crypto that is too slow for the event loop (RSA private operations,
 * SLH-DSA; key generation is expensive work, api/threads/tasks/expensive.ts). Select one with `pool.run(arg, { name: 'signWithKey' })`.
 *
 * Each task takes plain, structured-cloneable data (key material as its serialized bytes) and
 * returns plain data. Failures are thrown as plain `{code, message, details}`:
 * the pool side rebuilds them with errorFromData, never by instanceof.
 */
import { createHash } from 'node:crypto';
import { errorToData } from '../../../shared/errors/index.ts';
import { deserializeMaterial } from '../../../shared/crypto/material-codec.ts';
import { loadKeyVersion } from '../../../shared/crypto/material.ts';
import type { LoadedKeyVersion } from '../../../shared/crypto/material.ts';
import type { KeyUsage } from '../../../shared/crypto/registry.ts';
import { signMessage, verifyMessage } from '../../../shared/crypto/sign.ts';
import type { SignInput } from '../../../shared/crypto/sign.ts';
import { decryptCompact, encryptCompact } from '../../../shared/jose/compact-jwe.ts';
import { decapsulate, encapsulate } from '../../../shared/crypto/pqc.ts';

/** A serialized key version and, optionally, the identity the JWE header names (defaults: kid "pool", version 1). */
export interface KeyArg {
  material: Uint8Array;
  kid?: string;
  version?: number;
  usage?: KeyUsage;
}

/** Data or digest, as bytes. */
export interface InputArg {
  data?: Uint8Array;
  digest?: Uint8Array;
}

/** Bytes that crossed a thread boundary arrive as plain Uint8Array; view them as a Buffer without copying. */
const buf = (u: Uint8Array): Buffer => Buffer.from(u.buffer, u.byteOffset, u.byteLength);

async function task<T>(body: () => T | Promise<T>): Promise<T> {
  try {
    return await body();
  } catch (err) {
    throw errorToData(err);
  }
}

/**
 * Loaded keys by SHA-256 of their material (and identity): parsing PKCS#8 costs as much as the
 * RSA operation itself (bench/results/design-figures.md). Keyed by the bytes, never by the kid alone, so a cached key is
 * only ever used when the caller sends that very material again (the caller checks key state).
 */
const CACHE_LIMIT = 256;
const loaded = new Map<string, LoadedKeyVersion>();

function load(arg: KeyArg, usage: KeyUsage): LoadedKeyVersion {
  const id = { kid: arg.kid ?? 'pool', version: arg.version ?? 1, usage: arg.usage ?? usage };
  const cacheKey = `${createHash('sha256').update(arg.material).digest('base64')} ${id.kid} ${id.version} ${id.usage}`;
  let key = loaded.get(cacheKey);
  if (key) {
    loaded.delete(cacheKey); // most recently used goes last
  } else {
    key = loadKeyVersion(deserializeMaterial(arg.material), id);
    if (loaded.size >= CACHE_LIMIT) loaded.delete(loaded.keys().next().value!);
  }
  loaded.set(cacheKey, key);
  return key;
}

/** Exactly one of data and digest; signMessage refuses anything else as validation_failed. */
function input(arg: InputArg): SignInput {
  return { data: arg.data && buf(arg.data), digest: arg.digest && buf(arg.digest) } as SignInput;
}

/** Signs data or a digest. */
export function signWithKey(
  arg: KeyArg & { input: InputArg; algorithm?: string },
): Promise<{ signature: Uint8Array; algorithm: string }> {
  return task(() => signMessage(load(arg, 'sign'), input(arg.input), arg.algorithm));
}

/** Verifies a signature over data or a digest. */
export function verifyWithKey(
  arg: KeyArg & { input: InputArg; signature: Uint8Array; algorithm?: string },
): Promise<{ valid: boolean }> {
  return task(() => ({
    valid: verifyMessage(load(arg, 'sign'), input(arg.input), buf(arg.signature), arg.algorithm),
  }));
}

/** Encrypts to a compact JWE (worth the pool for EC keys: an ephemeral key agreement per message), binding the context digest when given. */
export function encryptCompactWithKey(
  arg: KeyArg & { plaintext: Uint8Array; context?: string },
): Promise<{ jwe: string }> {
  return task(() => ({
    jwe: encryptCompact(load(arg, 'encrypt'), buf(arg.plaintext), { context: arg.context }),
  }));
}

/** Decrypts a compact JWE whose header must name this key's kid and version and bind the same context digest. */
export function decryptCompactWithKey(
  arg: KeyArg & { jwe: string; context?: string },
): Promise<{ plaintext: Uint8Array }> {
  return task(() => {
    const key = load(arg, 'encrypt');
    return { plaintext: decryptCompact(arg.jwe, () => key, arg.context) };
  });
}

/** Encapsulates to an ML-KEM or hybrid key. */
export function encapsulateWithKey(
  arg: KeyArg,
): Promise<{ ciphertext: Uint8Array; sharedSecret: Uint8Array }> {
  return task(() => encapsulate(load(arg, 'encrypt')));
}

/** Decapsulates with an ML-KEM or hybrid key. */
export function decapsulateWithKey(
  arg: KeyArg & { ciphertext: Uint8Array },
): Promise<{ sharedSecret: Uint8Array }> {
  return task(() => ({ sharedSecret: decapsulate(load(arg, 'encrypt'), buf(arg.ciphertext)) }));
}
