/**
 * The tasks of the expensive-work pool (api/threads/expensive.ts). Each runs synchronously on its
 * thread: the async forms of node:crypto would hand the work to the process's libuv pool, which
 * data-mode signing uses, and so bring back the contention this pool exists to avoid.
 */
import { generateKeyPairSync, pbkdf2Sync } from 'node:crypto';
import { errorToData } from '../../../shared/errors/index.ts';
import { generateKeyMaterialSync } from '../../../shared/crypto/material.ts';
import { serializeMaterial } from '../../../shared/crypto/material-codec.ts';
import { keyTypeSpec } from '../../../shared/crypto/registry.ts';
import type { PasswordKeyRequest } from '../../../shared/pkcs7/types.ts';

function task<T>(body: () => T): Promise<T> {
  try {
    return Promise.resolve(body());
  } catch (err) {
    return Promise.reject(errorToData(err));
  }
}

/** PBKDF2 (RFC 8018 section 5.2) of a PWRI password: the key-encryption key. */
export function derivePbkdf2(r: PasswordKeyRequest): Promise<Uint8Array> {
  return task(() => pbkdf2Sync(r.password, r.salt, r.iterations, r.keyLength, r.digest));
}

/** A data key pair as AWS GenerateDataKeyPair answers it: PKCS#8 and SPKI DER. */
export interface DataKeyPairRequest {
  type: 'rsa' | 'ec';
  /** Modulus bits (RSA) or the OpenSSL curve name (EC). */
  size: number | string;
}

/** Generates a data key pair. */
export function generateDataKeyPairTask(
  r: DataKeyPairRequest,
): Promise<{ privateKey: Uint8Array; publicKey: Uint8Array }> {
  return task(() =>
    r.type === 'rsa'
      ? generateKeyPairSync('rsa', {
          modulusLength: r.size as number,
          publicKeyEncoding: { type: 'spki', format: 'der' },
          privateKeyEncoding: { type: 'pkcs8', format: 'der' },
        })
      : generateKeyPairSync('ec', {
          namedCurve: r.size as string,
          publicKeyEncoding: { type: 'spki', format: 'der' },
          privateKeyEncoding: { type: 'pkcs8', format: 'der' },
        }),
  );
}

/** Generates a key version of the catalogue (native key creation and rotation), serialized. */
export function generateKey({ type }: { type: string }): Promise<Uint8Array> {
  return task(() => serializeMaterial(generateKeyMaterialSync(keyTypeSpec(type).type)));
}
