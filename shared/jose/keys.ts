/**
 * JOSE key management for the detached JWE of a conversion (RFC 7518 section 4): wrapping a fresh
 * content key for a target key, and opening it again with the key a recipient header names.
 * One table of algorithms serves both directions, so what the writer produces the reader opens.
 */
import {
  X509Certificate,
  constants,
  createPublicKey,
  privateDecrypt,
  publicEncrypt,
  randomBytes,
} from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { aesKeyUnwrap, aesKeyWrap } from '../crypto/aes-kw.ts';
import { ephemeralAgreement, joseCurveOf, recipientAgreement } from '../crypto/ecdh-es.ts';
import type { JoseCurve } from '../crypto/ecdh-es.ts';
import { concatKdf } from '../crypto/kdf.ts';
import { problem, decryptionFailed } from '../errors/index.ts';
import { splitVersionedKid, versionedKid } from './kid.ts';
import { hpkeUnwrap, hpkeWrap } from './hpke-jwe.ts';
import { hpkeAlg, hpkeSuiteOf } from './pq-identifiers.ts';
import type { KeyPurpose, KidResolver, ResolvedKey } from './types.ts';

/** A header's `apu`/`apv` (RFC 7518 section 4.6.1.2 and 4.6.1.3): base64url, empty when absent. */
function partyInfo(value: unknown, name: string): Buffer | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !/^[A-Za-z0-9_-]*$/.test(value))
    throw new Error(`${name} is not base64url`);
  return Buffer.from(value, 'base64url');
}

/**
 * The key ECDH-ES derives on the recipient's side (RFC 7518 section 4.6.2): Z with the header's
 * `epk` (validated on the curve), then Concat KDF over `algorithmId` (the `alg`, or the `enc` for
 * direct agreement) with the header's `apu`/`apv`. Throws on any bad member; callers make that opaque.
 */
export function recipientDerivedKey(
  privateKey: KeyObject,
  crv: JoseCurve,
  header: Record<string, unknown>,
  algorithmId: string,
  keyBits: number,
): Buffer {
  const z = recipientAgreement(privateKey, crv, header.epk);
  return concatKdf(
    z,
    keyBits,
    algorithmId,
    partyInfo(header.apu, 'apu'),
    partyInfo(header.apv, 'apv'),
  );
}

/** Key-encryption key bytes of each AES key wrap (RFC 7518 section 4.4). Map: `alg` is sender input. */
const KW_BYTES = new Map<string, number>([
  ['A128KW', 16],
  ['A192KW', 24],
  ['A256KW', 32],
]);
const ECDH_KW = /^ECDH-ES\+(A(?:128|192|256)KW)$/;

/** The key-encryption key size in bits of an ECDH-ES+A*KW `alg` (RFC 7518 section 4.6), or undefined for any other value. */
export function ecdhKeyWrapBits(alg: unknown): number | undefined {
  const m = typeof alg === 'string' ? ECDH_KW.exec(alg) : null;
  return m ? KW_BYTES.get(m[1])! * 8 : undefined;
}

/**
 * A tenant key by the kid a header or request names (`<kid>#<version>` or bare, splitVersionedKid)
 * for one purpose, or the catalogue's key-not-found, key-usage-mismatch or key-version-retired.
 */
export async function keyByKid(
  resolver: KidResolver,
  name: string,
  purpose: KeyPurpose,
): Promise<ResolvedKey> {
  const { kid, version } = splitVersionedKid(name);
  const key = await resolver.byKid(kid, purpose, version);
  if (!key) throw problem('key_not_found', `no key ${name.slice(0, 128)} in this tenant`);
  return key;
}

/** The public half of a tenant key (its own, its private key's, or its certificate's). */
export function publicKeyOf(key: ResolvedKey): KeyObject | null {
  if (key.publicKey) return key.publicKey;
  if (key.privateKey) return createPublicKey(key.privateKey);
  if (key.certificate) return certificatePublicKey(key.certificate);
  return null;
}

/** A certificate's public key as a KeyObject; a certificate OpenSSL cannot read is malformed CMS. */
export function certificatePublicKey(der: Buffer): KeyObject {
  try {
    return new X509Certificate(der).publicKey;
  } catch (cause) {
    throw problem('cms_malformed', 'a certificate has an unreadable public key', { cause });
  }
}

/** The default key management for a target key. */
export function defaultKeyManagement(key: ResolvedKey): string {
  // ML-KEM and hybrid keys: HPKE Key Encryption, the mode that serves one recipient or several.
  const hpke = hpkeSuiteOf(key.type);
  if (hpke) return hpke.keyEncryption;
  if (key.secretKey) return `A${key.secretKey.symmetricKeySize! * 8}KW`;
  const type = publicKeyOf(key)?.asymmetricKeyType;
  if (type === 'rsa') return 'RSA-OAEP-256';
  if (type === 'ec') return 'ECDH-ES+A256KW';
  throw problem(
    'cms_key_unusable',
    `key ${key.kid} cannot receive a JWE (it needs an RSA, EC, AES, ML-KEM or ML-KEM hybrid key); name one in targetKid`,
  );
}

/**
 * The per-recipient member of the JWE JSON serialization. Its `kid` names the key version,
 * `<kid>#<version>`, as the runtime JWE and the public JWKs do.
 */
export interface JweRecipient {
  header: { alg: string; kid: string; epk?: Record<string, string>; ek?: string };
  encrypted_key: string;
}

/**
 * Encrypts the fresh content key for the target key; `alg` defaults per defaultKeyManagement.
 * `enc` is the content encryption, which HPKE Key Encryption binds into its key schedule.
 */
export function wrapContentKey(
  target: ResolvedKey,
  cek: Buffer,
  alg = defaultKeyManagement(target),
  enc?: string,
): JweRecipient {
  const unusable = () =>
    problem('cms_key_unusable', `key ${target.kid} cannot be used with ${alg}`);
  const kid = versionedKid(target.kid, target.version);
  const hpke = hpkeAlg(alg);
  if (hpke) {
    if (hpke.mode !== 'key-encryption' || hpke.type !== target.type || !enc) throw unusable();
    return hpkeWrap(target, cek, enc);
  }
  if (alg === 'RSA-OAEP-256' || alg === 'RSA-OAEP') {
    const pub = publicKeyOf(target);
    if (pub?.asymmetricKeyType !== 'rsa') throw unusable();
    const ek = publicEncrypt(
      {
        key: pub,
        padding: constants.RSA_PKCS1_OAEP_PADDING,
        oaepHash: alg === 'RSA-OAEP' ? 'sha1' : 'sha256',
      },
      cek,
    );
    return { header: { alg, kid }, encrypted_key: ek.toString('base64url') };
  }
  const ecdh = ECDH_KW.exec(alg);
  if (ecdh) {
    const pub = publicKeyOf(target);
    const crv = pub ? joseCurveOf(pub) : undefined;
    if (!pub || !crv) throw unusable();
    const { z, epk } = ephemeralAgreement(crv, pub);
    const kek = concatKdf(z, KW_BYTES.get(ecdh[1])! * 8, alg);
    return {
      header: { alg, kid, epk: { ...epk } },
      encrypted_key: aesKeyWrap(kek, cek).toString('base64url'),
    };
  }
  const kwBytes = KW_BYTES.get(alg);
  if (kwBytes) {
    const kek = target.secretKey?.export();
    if (!kek || kek.length !== kwBytes) throw unusable();
    return { header: { alg, kid }, encrypted_key: aesKeyWrap(kek, cek).toString('base64url') };
  }
  throw problem('cms_bad_metadata', `keyManagement ${alg.slice(0, 32)} is not supported`);
}

/**
 * Opens the content key of one JWE recipient. A key of the wrong kind is the opaque
 * decryption-failed; for a wrapped key that cannot be opened (RSA-OAEP padding, AES key wrap
 * integrity) or does not fit enc a random key stands in, so a bad key and a bad tag are told apart
 * by nothing, not even where they fail (RFC 7516 section 11.5).
 */
export function unwrapContentKey(
  key: ResolvedKey,
  header: Record<string, unknown>,
  encryptedKey: Buffer,
  cekBytes: number,
  enc?: string,
): Buffer {
  const alg = String(header.alg);
  if (hpkeAlg(alg)) {
    if (!enc)
      throw problem('jose_unsupported', `${alg.slice(0, 32)} needs the enc it was sealed for`);
    return hpkeUnwrap(key, header, encryptedKey, enc, cekBytes);
  }
  if (alg === 'RSA-OAEP-256' || alg === 'RSA-OAEP') {
    if (key.privateKey?.asymmetricKeyType !== 'rsa')
      throw decryptionFailed(new Error(`key ${key.kid} is not an RSA private key`));
    try {
      const cek = privateDecrypt(
        {
          key: key.privateKey,
          padding: constants.RSA_PKCS1_OAEP_PADDING,
          oaepHash: alg === 'RSA-OAEP' ? 'sha1' : 'sha256',
        },
        encryptedKey,
      );
      return cek.length === cekBytes ? cek : randomBytes(cekBytes);
    } catch {
      return randomBytes(cekBytes);
    }
  }
  const ecdh = ECDH_KW.exec(alg);
  const kwBytes = KW_BYTES.get(ecdh ? ecdh[1] : alg);
  if (!kwBytes)
    throw problem('jose_unsupported', `key management ${alg.slice(0, 32)} is not supported`);
  let kek: Buffer;
  try {
    if (ecdh) {
      const priv = key.privateKey;
      const crv = priv ? joseCurveOf(priv) : undefined;
      if (!priv || !crv) throw new Error(`key ${key.kid} is not an EC private key`);
      kek = recipientDerivedKey(priv, crv, header, alg, kwBytes * 8);
    } else {
      const secret = key.secretKey?.export();
      if (!secret || secret.length !== kwBytes)
        throw new Error(`key ${key.kid} is not a ${kwBytes * 8}-bit AES key`);
      kek = secret;
    }
  } catch (err) {
    throw decryptionFailed(err);
  }
  // A wrapped key that fails its integrity check or does not fit enc: a random key stands in, so
  // the failure surfaces at the tag, where every other one does.
  try {
    const cek = aesKeyUnwrap(kek, encryptedKey);
    return cek.length === cekBytes ? cek : randomBytes(cekBytes);
  } catch {
    return randomBytes(cekBytes);
  }
}
