/**
 * Recipient side of EnvelopedData (RFC 5652 section 6.2): who a RecipientInfo names, and the
 * recovery of the content-encryption key for key transport (RSA PKCS#1 v1.5, RSA-OAEP), key
 * agreement (ECDH with the X9.63 KDF and AES key wrap, RFC 5753) and previously distributed
 * symmetric keys (KEKRecipientInfo with AES key wrap, RFC 3394), passwords (RFC 3211, in
 * password-recipient.ts). Which of several recipients decrypts: recipient-choice.ts.
 */
import {
  constants,
  createPublicKey,
  diffieHellman,
  privateDecrypt,
  randomBytes,
} from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import type { KeyAgreeRecipientInfo, RecipientInfo } from '@peculiar/asn1-cms';
import { RsaEsOaepParams } from '@peculiar/asn1-rsa';
import { AlgorithmIdentifier } from '@peculiar/asn1-x509';
import { aesKeyUnwrap } from '../crypto/aes-kw.ts';
import { des3KeyUnwrap } from '../crypto/des3-kw.ts';
import { x963Kdf } from '../crypto/kdf.ts';
import { encodeOid, parseAsn, tlv, walk } from '../asn1/der.ts';
import { DIGESTS, OID, oidName } from '../asn1/oids.ts';
import { ECDH_KDF, KEY_WRAPS } from './algorithms.ts';
import { issuerSerialRef, skiRef } from './identifiers.ts';
import { PASSWORD_KEY_TYPE, pwriUnsupported, pwriUnwrap } from './password-recipient.ts';
import type {
  AlgorithmSummary,
  CmsKeyRef,
  IdentifierSummary,
  KeyResolver,
  RecipientSummary,
  ResolvedKey,
} from './types.ts';
import { AppError, problem, decryptionFailed } from '../errors/index.ts';

/** What a RecipientInfo says about its recipient, before any key is looked up. */
export interface RecipientDescription {
  type: RecipientSummary['type'];
  ref: CmsKeyRef | null;
  identifier: IdentifierSummary;
  keyEncryptionAlgorithm: AlgorithmSummary;
  keyWrapAlgorithm?: AlgorithmSummary;
  /** Why the engine cannot use this recipient, when it cannot. */
  unsupported?: string;
}

const alg = (oid: string): AlgorithmSummary => ({ oid, name: oidName(oid) });

function wrapAlgorithmOf(kea: AlgorithmIdentifier): AlgorithmIdentifier | null {
  return kea.parameters
    ? parseAsn(
        new Uint8Array(kea.parameters),
        AlgorithmIdentifier,
        'key wrap algorithm',
        'cms_malformed',
      )
    : null;
}

function kariRecipient(
  kari: KeyAgreeRecipientInfo,
): { ref: CmsKeyRef; summary: IdentifierSummary; encryptedKey: Buffer } | null {
  if (kari.recipientEncryptedKeys.length !== 1) return null;
  const rek = kari.recipientEncryptedKeys[0];
  const id = rek.rid.issuerAndSerialNumber
    ? issuerSerialRef(rek.rid.issuerAndSerialNumber)
    : skiRef(rek.rid.rKeyId!.subjectKeyIdentifier.buffer);
  return { ref: id.ref, summary: id.summary, encryptedKey: Buffer.from(rek.encryptedKey.buffer) };
}

/** Descriptions by the parsed RecipientInfo they describe (see describeRecipient). */
const described = new WeakMap<RecipientInfo, RecipientDescription>();

/**
 * Describes one RecipientInfo for the analysis and for key lookup. Choosing the recipient and
 * finding its key both ask for the same RecipientInfo, so the description is made once per
 * parsed RecipientInfo; nothing changes it after it is made.
 */
export function describeRecipient(ri: RecipientInfo): RecipientDescription {
  let d = described.get(ri);
  if (!d) {
    d = describe(ri);
    described.set(ri, d);
  }
  return d;
}

function describe(ri: RecipientInfo): RecipientDescription {
  if (ri.ktri) {
    const rid = ri.ktri.rid;
    const id = rid.issuerAndSerialNumber
      ? issuerSerialRef(rid.issuerAndSerialNumber)
      : skiRef(rid.subjectKeyIdentifier!.buffer);
    const kea = ri.ktri.keyEncryptionAlgorithm.algorithm;
    const ok = kea === OID.rsaEncryption || kea === OID.rsaesOaep;
    return {
      type: 'keyTransport',
      ref: id.ref,
      identifier: id.summary,
      keyEncryptionAlgorithm: alg(kea),
      ...(ok ? {} : { unsupported: `key transport ${oidName(kea)}` }),
    };
  }
  if (ri.kari) {
    const kea = ri.kari.keyEncryptionAlgorithm;
    const wrap = wrapAlgorithmOf(kea);
    const rec = kariRecipient(ri.kari);
    const d: RecipientDescription = {
      type: 'keyAgreement',
      ref: rec?.ref ?? null,
      identifier: rec?.summary ?? { type: 'other' },
      keyEncryptionAlgorithm: alg(kea.algorithm),
      ...(wrap ? { keyWrapAlgorithm: alg(wrap.algorithm) } : {}),
    };
    if (!rec) d.unsupported = 'a key agreement with several recipient keys';
    else if (!ri.kari.originator.originatorKey)
      d.unsupported = 'a key agreement without an ephemeral originator key';
    else if (!ECDH_KDF[kea.algorithm]) d.unsupported = `key agreement ${oidName(kea.algorithm)}`;
    else if (!wrap || !KEY_WRAPS.has(wrap.algorithm))
      d.unsupported = 'a key wrap other than AES key wrap';
    return d;
  }
  if (ri.kekri) {
    const kekId = Buffer.from(ri.kekri.kekid.keyIdentifier.buffer);
    const kea = ri.kekri.keyEncryptionAlgorithm.algorithm;
    return {
      type: 'kek',
      ref: { kekId },
      identifier: { type: 'kekIdentifier', kekId: kekId.toString('hex').toUpperCase() },
      keyEncryptionAlgorithm: alg(kea),
      ...(KEY_WRAPS.has(kea) ? {} : { unsupported: `KEK algorithm ${oidName(kea)}` }),
    };
  }
  if (ri.pwri) {
    const why = pwriUnsupported(ri.pwri);
    return {
      type: 'password',
      ref: null,
      identifier: { type: 'other' },
      keyEncryptionAlgorithm: alg(ri.pwri.keyEncryptionAlgorithm.algorithm),
      ...(why ? { unsupported: why } : {}),
    };
  }
  return {
    type: 'other',
    ref: null,
    identifier: { type: 'other' },
    keyEncryptionAlgorithm: alg('0.0'),
    unsupported: 'other recipient types',
  };
}

/** Finds the recipient's key: the metadata kid wins, else the CMS identifier. */
export async function findRecipientKey(
  d: RecipientDescription,
  resolver: KeyResolver,
  recipientKid?: string,
): Promise<ResolvedKey> {
  const key = recipientKid
    ? await resolver.byKid(recipientKid, 'encrypt')
    : d.ref
      ? await resolver.byCmsRef(d.ref, 'encrypt')
      : null;
  if (!key) {
    throw problem(
      'cms_key_not_imported',
      recipientKid ? `key ${recipientKid} is not imported` : 'the recipient key is not imported',
      { details: { identifier: d.identifier } },
    );
  }
  return key;
}

/** Key unwrap (AES, RFC 3394; Triple-DES, RFC 3217); any failure is the opaque decryption failure. */
export function keyUnwrap(wrapOid: string, kek: Buffer, wrapped: Buffer): Buffer {
  const spec = KEY_WRAPS.get(wrapOid);
  if (!spec) throw problem('cms_unsupported', `key wrap ${oidName(wrapOid)} is not supported`);
  if (kek.length !== spec.keyLength)
    throw problem('cms_key_unusable', 'the key-encryption key has the wrong length');
  try {
    return spec.kind === 'aes' ? aesKeyUnwrap(kek, wrapped) : des3KeyUnwrap(kek, wrapped);
  } catch (err) {
    throw decryptionFailed(err);
  }
}

const CURVE_OIDS: Record<string, string> = {
  prime256v1: OID.p256,
  secp384r1: OID.p384,
  secp521r1: OID.p521,
};

/** Field size in bytes of each EC curve a key agreement recipient may use. */
const FIELD_BYTES: Record<string, number> = { prime256v1: 32, secp384r1: 48, secp521r1: 66 };

/**
 * Whether a private key agrees in the group of a key agreement's originator key: X25519 and X448
 * by the originator's algorithm, EC also by curve (its point's length, as its parameters are
 * absent, RFC 5753 section 7.1.3). `exact` false asks for the key family alone.
 */
export function kariKeyFits(
  kari: KeyAgreeRecipientInfo,
  priv: KeyObject | undefined,
  exact = true,
): boolean {
  const o = kari.originator.originatorKey;
  const type = priv?.asymmetricKeyType;
  if (!o || !type) return false;
  const alg = o.algorithm.algorithm;
  if (alg === OID.x25519 || alg === OID.x448) return OID[type as 'x25519' | 'x448'] === alg;
  if (alg !== OID.ecPublicKey || type !== 'ec') return false;
  const f = FIELD_BYTES[priv!.asymmetricKeyDetails?.namedCurve ?? ''];
  const n = o.publicKey.byteLength;
  return !exact || (!!f && (n === 1 + 2 * f || n === 1 + f));
}

function privateKeyOf(key: ResolvedKey): KeyObject {
  if (!key.privateKey) throw problem('cms_key_unusable', `key ${key.kid} has no private part`);
  return key.privateKey;
}

/**
 * The originator's ephemeral key as an SPKI in the recipient's group: for EC the curve is the
 * recipient's (RFC 5753 section 7.1.3: the originator key's parameters are absent or NULL); for
 * X25519 and X448 the algorithm is id-X25519/id-X448 with absent parameters (RFC 8418 section 2).
 */
function originatorSpki(priv: KeyObject, kid: string, originatorKey: Buffer): Buffer {
  const type = priv.asymmetricKeyType;
  const curve = type === 'ec' ? priv.asymmetricKeyDetails?.namedCurve : undefined;
  const algorithm =
    type === 'x25519' || type === 'x448'
      ? tlv(0x06, encodeOid(OID[type]))
      : curve && CURVE_OIDS[curve]
        ? Buffer.concat([
            tlv(0x06, encodeOid(OID.ecPublicKey)),
            tlv(0x06, encodeOid(CURVE_OIDS[curve])),
          ])
        : null;
  if (!algorithm)
    throw problem(
      'cms_key_unusable',
      `key ${kid} is not a P-256, P-384, P-521, X25519 or X448 key`,
    );
  return tlv(
    0x30,
    Buffer.concat([
      tlv(0x30, algorithm),
      tlv(0x03, Buffer.concat([Buffer.from([0]), originatorKey])),
    ]),
  );
}

function unwrapKari(kari: KeyAgreeRecipientInfo, key: ResolvedKey): Buffer {
  const priv = privateKeyOf(key);
  const spki = originatorSpki(priv, key.kid, Buffer.from(kari.originator.originatorKey!.publicKey));
  let z: Buffer;
  try {
    z = diffieHellman({
      privateKey: priv,
      publicKey: createPublicKey({ key: spki, format: 'der', type: 'spki' }),
    });
  } catch (err) {
    throw problem(
      'cms_malformed',
      'the originator public key is not a usable key of the recipient curve (off it, or of small order)',
      { cause: err },
    );
  }
  const kea = kari.keyEncryptionAlgorithm;
  const wrap = wrapAlgorithmOf(kea)!;
  const keyLength = KEY_WRAPS.get(wrap.algorithm)!.keyLength;
  const bits = Buffer.alloc(4);
  bits.writeUInt32BE(keyLength * 8);
  // ECC-CMS-SharedInfo (RFC 5753 section 7.2): the wrap AlgorithmIdentifier, the ukm, the KEK length.
  const sharedInfo = tlv(
    0x30,
    Buffer.concat([
      // The wrap AlgorithmIdentifier as the message encodes it: AES wraps omit parameters, the
      // Triple-DES wrap has NULL ones (RFC 3370 section 4.3.1), and OpenSSL hashes them as sent.
      Buffer.from(kea.parameters!),
      ...(kari.ukm ? [tlv(0xa0, tlv(0x04, Buffer.from(kari.ukm.buffer)))] : []),
      tlv(0xa2, tlv(0x04, bits)),
    ]),
  );
  // RFC 5753 section 7.2: the X9.63 KDF with the scheme's hash over Z and ECC-CMS-SharedInfo.
  const kek = x963Kdf(ECDH_KDF[kea.algorithm], z, sharedInfo, keyLength);
  return keyUnwrap(wrap.algorithm, kek, kariRecipient(kari)!.encryptedKey);
}

function unwrapKtri(ri: RecipientInfo, key: ResolvedKey): Buffer {
  const ktri = ri.ktri!;
  const priv = privateKeyOf(key);
  if (priv.asymmetricKeyType !== 'rsa')
    throw problem('cms_key_unusable', `key ${key.kid} is not an RSA key`);
  const ek = Buffer.from(ktri.encryptedKey.buffer);
  try {
    if (ktri.keyEncryptionAlgorithm.algorithm === OID.rsaEncryption) {
      // Node 24 answers a padding failure with a synthetic key (implicit rejection), so a wrong
      // key surfaces later as a content decryption failure: no padding oracle either way.
      return privateDecrypt({ key: priv, padding: constants.RSA_PKCS1_PADDING }, ek);
    }
    const p = ktri.keyEncryptionAlgorithm.parameters;
    const params = p
      ? parseAsn(new Uint8Array(p), RsaEsOaepParams, 'RSAES-OAEP parameters', 'cms_malformed')
      : new RsaEsOaepParams();
    const hash = DIGESTS[params.hashAlgorithm.algorithm];
    const mgf = params.maskGenAlgorithm.parameters
      ? parseAsn(
          new Uint8Array(params.maskGenAlgorithm.parameters),
          AlgorithmIdentifier,
          'MGF1 hash',
          'cms_malformed',
        ).algorithm
      : OID.sha1;
    // Node uses one hash for OAEP and MGF1 (RFC 8017 section A.2.1 allows them to differ).
    if (!hash || mgf !== params.hashAlgorithm.algorithm)
      throw problem('cms_unsupported', 'RSA-OAEP with different OAEP and MGF1 hashes');
    // Only an explicit [2] pSourceAlgorithm carries a label; the decoder's default is not the empty one.
    const explicit = p ? walk(Buffer.from(p)) : null;
    const fields =
      explicit?.length === 1
        ? walk(Buffer.from(p!), explicit[0].valueStart, explicit[0].end)
        : null;
    const label =
      fields?.some((f) => f.tag === 0xa2) && params.pSourceAlgorithm.parameters
        ? Buffer.from(params.pSourceAlgorithm.parameters).subarray(2)
        : undefined;
    return privateDecrypt(
      {
        key: priv,
        padding: constants.RSA_PKCS1_OAEP_PADDING,
        oaepHash: hash,
        ...(label?.length ? { oaepLabel: label } : {}),
      },
      ek,
    );
  } catch (err) {
    if (err instanceof Error && 'slug' in err) throw err;
    throw decryptionFailed(err);
  }
}

/** The tenant's key for the recipient (recipientKid picks); nothing is decrypted yet. */
export async function recipientKeyOf(
  ri: RecipientInfo,
  resolver: KeyResolver,
  recipientKid: string | undefined,
): Promise<ResolvedKey> {
  const d = describeRecipient(ri);
  if (d.unsupported) throw problem('cms_unsupported', `${d.unsupported} is not supported`);
  return findRecipientKey(d, resolver, recipientKid);
}

/**
 * Opens the content-encryption key with the recipient's key, admitted by the resolver first (403
 * without crypto.decrypt, 429 past the decryption-failure budget, whose point it reserves) so
 * nothing is decrypted for a caller who may not. A key that cannot be unwrapped (bad PKCS#1 v1.5
 * or OAEP padding, an AES key wrap integrity failure) or has the wrong length is replaced by a
 * random key of the right length (RFC 3218 section 2.3.2, as shared/jose/keys.ts does for JOSE):
 * every failure then surfaces where a content failure does, as the one decryption-failed
 * (docs/decisions.md, "Failures that tell nothing"). `rejected` keeps the cause for the log.
 */
export async function openContentKey(
  ri: RecipientInfo,
  key: ResolvedKey,
  resolver: KeyResolver,
  keyLength: number,
): Promise<{ cek: Buffer; rejected?: Error }> {
  if (!!ri.pwri !== (key.type === PASSWORD_KEY_TYPE))
    throw problem('cms_key_unusable', 'a password recipient opens with metadata.password only');
  if (ri.kekri && !key.secretKey)
    throw problem('cms_key_unusable', `key ${key.kid} is not a symmetric key`);
  if ((ri.ktri || ri.kari) && !key.privateKey)
    throw problem('cms_key_unusable', `key ${key.kid} has no private part`);
  if (ri.ktri && key.privateKey!.asymmetricKeyType !== 'rsa')
    throw problem('cms_key_unusable', `key ${key.kid} is not an RSA key`);
  // A key of another family (recipientKid naming an X25519 key for an EC recipient) is the
  // caller's choice, not a malformed file; an EC point of the wrong length stays cms-malformed.
  if (ri.kari && !kariKeyFits(ri.kari, key.privateKey, false))
    throw problem(
      'cms_key_unusable',
      `key ${key.kid} is not a key of the recipient's key agreement`,
    );
  await resolver.admitDecryption?.(key.kid);
  let cek: Buffer;
  try {
    if (ri.ktri) cek = unwrapKtri(ri, key);
    else if (ri.kari) cek = unwrapKari(ri.kari, key);
    else if (ri.pwri)
      cek = await pwriUnwrap(
        ri.pwri,
        key.secretKey!,
        resolver.derivePasswordKey && ((r) => resolver.derivePasswordKey!(r)),
      );
    else
      cek = keyUnwrap(
        ri.kekri!.keyEncryptionAlgorithm.algorithm,
        key.secretKey!.export(),
        Buffer.from(ri.kekri!.encryptedKey.buffer),
      );
  } catch (err) {
    // Anything else (a malformed or unsupported wrap, a key of the wrong kind) is no decryption:
    // the reserved point goes back with the problem.
    if (!(err instanceof AppError && err.code === 'decryption_failed')) {
      await resolver.decryptionSucceeded?.(key.kid).catch(() => {});
      throw err;
    }
    return { cek: randomBytes(keyLength), rejected: err };
  }
  if (cek.length !== keyLength) {
    const rejected = new Error(`content key of ${cek.length} bytes, expected ${keyLength}`);
    return { cek: randomBytes(keyLength), rejected };
  }
  return { cek };
}
