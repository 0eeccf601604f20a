/**
 * The key operations of the stream endpoints on JOSE objects that convert wrote: opening the
 * content key of a JWE recipient (RFC 7518 section 4) and checking a JWS signature over a
 * streamed signing input (RFC 7515 section 5.2, RFC 7797 for b64 false).
 */
import { constants, createPublicKey, createVerify, privateDecrypt, randomBytes, verify as verifyOneShot } from 'node:crypto';
import type { KeyObject, Verify } from 'node:crypto';
import { aesKeyUnwrap, recipientAgreement } from '../../../shared/crypto/ecdh-es.ts';
import type { JoseCurve } from '../../../shared/crypto/ecdh-es.ts';
import { certificatePublicKey } from '../../../shared/pkcs7/certificates.ts';
import { concatKdf } from '../../../shared/pkcs7/jwe.ts';
import { EDDSA_CAP } from '../../../shared/pkcs7/jws.ts';
import type { KeyPurpose, KeyResolver, ResolvedKey } from '../../../shared/pkcs7/types.ts';
import { AppError } from '../../../shared/errors/index.ts';
import { splitVersionedKid } from '../../../shared/crypto/jwe.ts';
import { decryptionFailed, streamProblem } from './problems.ts';

const CURVE: Record<string, JoseCurve> = { prime256v1: 'P-256', secp384r1: 'P-384', secp521r1: 'P-521' };
const KW_BYTES: Record<string, number> = { A128KW: 16, A192KW: 24, A256KW: 32 };

/**
 * A tenant key by the kid a header or request names (`<kid>#<version>` or bare, splitVersionedKid) for one purpose, or the
 * catalogue's key-not-found (spec 7.3), key-usage-mismatch or key-version-retired.
 */
export async function keyByKid(resolver: KeyResolver, name: string, purpose: KeyPurpose): Promise<ResolvedKey> {
  const { kid, version } = splitVersionedKid(name);
  const key = await resolver.byKid(kid, purpose, version);
  if (!key) throw new AppError('key_not_found', `no key ${name.slice(0, 128)} in this tenant`);
  return key;
}

/** The public half of a tenant key (its own, its private key's, or its certificate's). */
export function publicKeyOf(key: ResolvedKey): KeyObject | null {
  if (key.publicKey) return key.publicKey;
  if (key.privateKey) return createPublicKey(key.privateKey);
  if (key.certificate) return certificatePublicKey(key.certificate);
  return null;
}

/**
 * Opens the content key of one JWE recipient. Every failure, down to a wrong key length, is the
 * same opaque decryption-failed; for RSA-OAEP a random key stands in for a failed decryption,
 * so a bad key and a bad tag are told apart by nothing (RFC 7516 section 11.5).
 */
export function unwrapContentKey(key: ResolvedKey, header: Record<string, unknown>, encryptedKey: Buffer, cekBytes: number): Buffer {
  const alg = String(header.alg);
  if (alg === 'RSA-OAEP-256' || alg === 'RSA-OAEP') {
    if (key.privateKey?.asymmetricKeyType !== 'rsa') throw decryptionFailed(new Error(`key ${key.kid} is not an RSA private key`));
    try {
      const cek = privateDecrypt({ key: key.privateKey, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: alg === 'RSA-OAEP' ? 'sha1' : 'sha256' }, encryptedKey);
      return cek.length === cekBytes ? cek : randomBytes(cekBytes);
    } catch {
      return randomBytes(cekBytes);
    }
  }
  const ecdh = /^ECDH-ES\+(A(?:128|192|256)KW)$/.exec(alg);
  // hasOwn: alg comes from the sender's header, and "constructor" must not find Object's.
  const kwName = ecdh ? ecdh[1] : alg;
  const kwBytes = Object.hasOwn(KW_BYTES, kwName) ? KW_BYTES[kwName] : undefined;
  if (!kwBytes) throw streamProblem('jose_unsupported', `key management ${alg.slice(0, 32)} is not supported`);
  let cek: Buffer;
  try {
    let kek: Buffer;
    if (ecdh) {
      const priv = key.privateKey;
      const crv = CURVE[priv?.asymmetricKeyDetails?.namedCurve ?? ''];
      if (!priv || priv.asymmetricKeyType !== 'ec' || !crv) throw new Error(`key ${key.kid} is not an EC private key`);
      kek = concatKdf(recipientAgreement(priv, crv, header.epk), alg, kwBytes);
    } else {
      const secret = key.secretKey?.export();
      if (!secret || secret.length !== kwBytes) throw new Error(`key ${key.kid} is not a ${kwBytes * 8}-bit AES key`);
      kek = secret;
    }
    cek = aesKeyUnwrap(kek, encryptedKey);
  } catch (err) {
    throw decryptionFailed(err);
  }
  if (cek.length !== cekBytes) throw decryptionFailed(new Error('the unwrapped key does not fit enc'));
  return cek;
}

const HASH: Record<string, string> = { '256': 'sha256', '384': 'sha384', '512': 'sha512' };

/** The hash of a JWS alg (sha256 for EdDSA, which names none). */
export function hashOfAlg(alg: string): string {
  return HASH[alg.slice(2)] ?? 'sha256';
}

/** Checks one JWS signature over a signing input fed in pieces. */
export interface StreamVerifier {
  update(data: Buffer): void;
  /** True when the signature verifies with `key`. */
  verify(key: KeyObject, signature: Buffer): boolean;
}

/** A verifier for a JWS alg (RFC 7518 section 3); EdDSA holds the input up to EDDSA_CAP bytes. */
export function streamVerifier(alg: string): StreamVerifier {
  if (alg === 'EdDSA') {
    const held: Buffer[] = [];
    let n = 0;
    return {
      update(data) {
        n += data.length;
        if (n > EDDSA_CAP) throw streamProblem('jose_too_large', `EdDSA verifies at most ${EDDSA_CAP} bytes of signing input; this content is larger`);
        held.push(Buffer.from(data));
      },
      verify: (key, sig) => key.asymmetricKeyType === 'ed25519' && verifyOneShot(null, Buffer.concat(held), key, sig),
    };
  }
  const m = /^(RS|PS|ES)(256|384|512)$/.exec(alg);
  if (!m) throw streamProblem('jose_unsupported', `JWS alg ${alg.slice(0, 16)} is not supported`);
  const v: Verify = createVerify(HASH[m[2]]);
  return {
    update: (data) => v.update(data),
    verify(key, sig) {
      const type = key.asymmetricKeyType;
      try {
        if (m[1] === 'ES') return type === 'ec' && v.verify({ key, dsaEncoding: 'ieee-p1363' }, sig);
        if (type !== 'rsa' && type !== 'rsa-pss') return false;
        // RFC 7518 section 3.5: PSS with MGF1 of the same hash and a salt as long as the hash.
        if (m[1] === 'PS') return v.verify({ key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: Number(m[2]) / 8 }, sig);
        return v.verify({ key, padding: constants.RSA_PKCS1_PADDING }, sig);
      } catch {
        return false;
      }
    },
  };
}

/**
 * The signing input after ASCII(protected) '.': the content as it comes (b64 false, RFC 7797)
 * or its base64url, encoded in whole 3-byte groups so the pieces concatenate (RFC 7515).
 */
export class SigningInputEncoder {
  #carry: Buffer = Buffer.alloc(0);
  readonly b64: boolean;

  constructor(b64: boolean) {
    this.b64 = b64;
  }

  update(chunk: Buffer): Buffer {
    if (!this.b64) return chunk;
    const all = this.#carry.length ? Buffer.concat([this.#carry, chunk]) : chunk;
    const whole = all.length - (all.length % 3);
    this.#carry = Buffer.from(all.subarray(whole));
    return Buffer.from(all.subarray(0, whole).toString('base64url'), 'ascii');
  }

  final(): Buffer {
    const rest = this.b64 ? Buffer.from(this.#carry.toString('base64url'), 'ascii') : Buffer.alloc(0);
    this.#carry = Buffer.alloc(0);
    return rest;
  }
}
