/**
 * Signer side of SignedData (RFC 5652 section 5): identifiers, the digests computed while the
 * content streams, and the verification of the one signature once the SignerInfo (which follows
 * the content) has been read.
 */
import { constants, createHash, timingSafeEqual, verify } from 'node:crypto';
import type { Hash, KeyObject } from 'node:crypto';
import { RsaSaPssParams } from '@peculiar/asn1-rsa';
import { AlgorithmIdentifier } from '@peculiar/asn1-x509';
import type { AlgorithmIdentifier as AlgId } from '@peculiar/asn1-x509';
import { certificatePublicKey } from '../jose/keys.ts';
import { matchCertificate } from './certificates.ts';
import type { ParsedCertificate } from './certificates.ts';
import { signedAttrsDer } from './cms-structure.ts';
import type { CapturedSigner } from './cms-structure.ts';
import { decodeOid, parseAsn, walk } from '../asn1/der.ts';
import { OID, oidName } from '../asn1/oids.ts';
import { cmsDigestFault, cmsDigestName, createCmsHash } from './algorithms.ts';
import { issuerSerialRef, skiRef } from './identifiers.ts';
import { ecdsaVerifyDigest } from '../crypto/ecdsa-digest.ts';
import { derToP1363 } from '../crypto/ecdsa-signature.ts';
import { curveSize, joseCurveOf } from '../crypto/ecdh-es.ts';
import { isDigestHash, pkcs1VerifyDigest, pssVerifyDigest } from '../crypto/rsa-digest.ts';
import type { CmsKeyRef, IdentifierSummary } from './types.ts';
import { problem } from '../errors/index.ts';

/** How a signature was made, from SignerInfo.signatureAlgorithm. */
export interface SignatureScheme {
  kind: 'rsa' | 'pss' | 'ecdsa' | 'ed25519' | 'ed448';
  /** Node hash name of the signature's digest. */
  hash: string;
  saltLength?: number;
}

/** What a SignerInfo says about its signer. */
export interface SignerDescription {
  ref: CmsKeyRef;
  identifier: IdentifierSummary;
  digestOid: string;
  signatureOid: string;
  scheme: SignatureScheme | null;
  signedAttrs: Buffer | null;
  unsupported?: string;
}

const RSA_HASH: Record<string, string> = {
  [OID.sha1WithRSA]: 'sha1',
  [OID.sha256WithRSA]: 'sha256',
  [OID.sha384WithRSA]: 'sha384',
  [OID.sha512WithRSA]: 'sha512',
  [OID.rsaSha3_256]: 'sha3-256',
  [OID.rsaSha3_384]: 'sha3-384',
  [OID.rsaSha3_512]: 'sha3-512',
};
const ECDSA_HASH: Record<string, string> = {
  [OID.ecdsaSha1]: 'sha1',
  [OID.ecdsaSha256]: 'sha256',
  [OID.ecdsaSha384]: 'sha384',
  [OID.ecdsaSha512]: 'sha512',
  [OID.ecdsaSha3_256]: 'sha3-256',
  [OID.ecdsaSha3_384]: 'sha3-384',
  [OID.ecdsaSha3_512]: 'sha3-512',
};

/**
 * Longest PSS salt accepted, in bytes: the room an RSA-8192 modulus leaves (RFC 8017 section
 * 9.1.1 step 4: emLen >= hLen + sLen + 2). A larger one fits no key the service reads.
 */
const MAX_PSS_SALT = 1024;

/** The PSS scheme of RSASSA-PSS-params (RFC 4055 section 3.1), or why it is not supported. */
function pssScheme(parameters: ArrayBuffer | null | undefined): SignatureScheme | string {
  const p = parameters
    ? parseAsn(new Uint8Array(parameters), RsaSaPssParams, 'RSASSA-PSS parameters', 'cms_malformed')
    : new RsaSaPssParams();
  const hashOid = p.hashAlgorithm.algorithm;
  const hash = cmsDigestName(hashOid);
  if (!hash || hash === 'shake256') return `RSASSA-PSS with hash ${oidName(hashOid)}`;
  if (p.maskGenAlgorithm.algorithm !== OID.mgf1)
    return `RSASSA-PSS with mask generation function ${oidName(p.maskGenAlgorithm.algorithm)}`;
  const mgfHash = p.maskGenAlgorithm.parameters
    ? parseAsn(
        new Uint8Array(p.maskGenAlgorithm.parameters),
        AlgorithmIdentifier,
        'MGF1 hash',
        'cms_malformed',
      ).algorithm
    : OID.sha1;
  // Node signs and verifies PSS with MGF1 over the same hash (RFC 8017 section 9.1 permits others).
  if (mgfHash !== hashOid)
    return `RSASSA-PSS with MGF1 over ${oidName(mgfHash)} and hash ${oidName(hashOid)}`;
  if (!Number.isSafeInteger(p.saltLength) || p.saltLength < 0 || p.saltLength > MAX_PSS_SALT)
    return `RSASSA-PSS with a salt length of ${String(p.saltLength).slice(0, 24)} bytes (at most ${MAX_PSS_SALT})`;
  if (p.trailerField !== 1)
    return `RSASSA-PSS with trailer field ${String(p.trailerField).slice(0, 24)}`;
  return { kind: 'pss', hash, saltLength: p.saltLength };
}

/** The scheme of a SignerInfo's signatureAlgorithm, or why it is not supported. */
function schemeOf(sigAlg: AlgId, digestOid: string): SignatureScheme | string {
  const oid = sigAlg.algorithm;
  const digest = cmsDigestName(digestOid);
  const unknown = `signature algorithm ${oidName(oid)}`;
  if (oid === OID.rsaEncryption) return digest ? { kind: 'rsa', hash: digest } : unknown;
  if (RSA_HASH[oid]) return { kind: 'rsa', hash: RSA_HASH[oid] };
  if (ECDSA_HASH[oid]) return { kind: 'ecdsa', hash: ECDSA_HASH[oid] };
  if (oid === OID.ecPublicKey) return digest ? { kind: 'ecdsa', hash: digest } : unknown;
  // RFC 8419 section 3: Ed25519 with SHA-512, Ed448 with SHAKE256 (512 bits) as the CMS digest.
  if (oid === OID.ed25519) return { kind: 'ed25519', hash: 'sha512' };
  if (oid === OID.ed448) return { kind: 'ed448', hash: 'shake256' };
  if (oid === OID.rsassaPss) return pssScheme(sigAlg.parameters);
  return unknown;
}

/** Descriptions by the parsed SignerInfo they describe (see describeSigner). */
const described = new WeakMap<CapturedSigner['info'], SignerDescription>();

/**
 * Describes one SignerInfo for the analysis, key lookup and verification. A conversion asks for
 * the same SignerInfo several times (the detached check, the key lookup, the signature check),
 * so the description is made once per parsed SignerInfo; nothing changes it after it is made.
 */
export function describeSigner(s: CapturedSigner): SignerDescription {
  let d = described.get(s.info);
  if (!d) {
    d = describe(s);
    described.set(s.info, d);
  }
  return d;
}

function describe(s: CapturedSigner): SignerDescription {
  const sid = s.info.sid;
  const id = sid.issuerAndSerialNumber
    ? issuerSerialRef(sid.issuerAndSerialNumber)
    : skiRef(sid.subjectKeyIdentifier!.buffer);
  const digestOid = s.info.digestAlgorithm.algorithm;
  const signatureOid = s.info.signatureAlgorithm.algorithm;
  const scheme = schemeOf(s.info.signatureAlgorithm, digestOid);
  const d: SignerDescription = {
    ref: id.ref,
    identifier: id.summary,
    digestOid,
    signatureOid,
    scheme: typeof scheme === 'string' ? null : scheme,
    signedAttrs: signedAttrsDer(s),
  };
  const digestFault = cmsDigestFault(digestOid, s.info.digestAlgorithm.parameters);
  if (!cmsDigestName(digestOid)) d.unsupported = `digest algorithm ${oidName(digestOid)}`;
  else if (digestFault) d.unsupported = digestFault;
  else if (typeof scheme === 'string') d.unsupported = scheme;
  else if (!d.signedAttrs && scheme.kind === 'ed25519')
    // PureEdDSA signs the whole content (RFC 8032), and SHA-512, Ed25519's digest, is declared by
    // RSA and ECDSA signers too: holding every such content is not done (Ed448's SHAKE256 is its own).
    d.unsupported = 'Ed25519 signatures without signed attributes';
  return d;
}

/**
 * Most content held for an Ed448 signer without signed attributes: PureEdDSA signs the content
 * itself (RFC 8419 section 3.1, RFC 8032), which no digest stands for.
 */
export const PURE_EDDSA_CAP = 8 * 1024 * 1024;
/** Where digest() puts the held content: no OID looks like it. */
const HELD_CONTENT = 'held-content';

/**
 * The digests of the content for every algorithm SignedData.digestAlgorithms declares. When they
 * declare SHAKE256, the digest of Ed448 alone, the content is also held up to PURE_EDDSA_CAP for a
 * signer without signed attributes; past it that signer is cms-eddsa-content-too-large.
 */
export class ContentDigests {
  #hashes = new Map<string, Hash>();
  #held: Buffer[] | null = null;
  #heldBytes = 0;

  constructor(digestOids: string[]) {
    for (const oid of digestOids)
      if (cmsDigestName(oid) && !this.#hashes.has(oid)) this.#hashes.set(oid, createCmsHash(oid));
    // A SignedData that declares none still has a signer digest; SHA-256 is the CMS default in practice.
    if (this.#hashes.size === 0) this.#hashes.set(OID.sha256, createHash('sha256'));
    if (digestOids.some((oid) => cmsDigestName(oid) === 'shake256')) this.#held = [];
  }

  update(chunk: Buffer): void {
    for (const h of this.#hashes.values()) h.update(chunk);
    if (!this.#held) return;
    this.#heldBytes += chunk.length;
    if (this.#heldBytes > PURE_EDDSA_CAP) this.#held = null;
    else this.#held.push(Buffer.from(chunk));
  }

  /** Finishes every digest (and hands over the held content, see the class). */
  digest(): Map<string, Buffer> {
    const out = new Map<string, Buffer>();
    for (const [oid, h] of this.#hashes) out.set(oid, h.digest());
    if (this.#held) out.set(HELD_CONTENT, Buffer.concat(this.#held));
    this.#held = null;
    return out;
  }
}

function attributeValue(attrs: Buffer, type: string): Buffer | null {
  return attributeNode(attrs, type)?.bytes ?? null;
}

function attributeNode(attrs: Buffer, type: string): { tag: number; bytes: Buffer } | null {
  const set = walk(attrs);
  const items = set && set.length === 1 ? walk(attrs, set[0].valueStart, set[0].end) : null;
  if (!items) throw problem('cms_malformed', 'malformed signed attributes');
  let found: { tag: number; bytes: Buffer } | null = null;
  for (const item of items) {
    const parts = walk(attrs, item.valueStart, item.end);
    if (!parts || parts.length !== 2 || parts[0].tag !== 0x06)
      throw problem('cms_malformed', 'malformed signed attribute');
    if (decodeOid(attrs.subarray(parts[0].valueStart, parts[0].end)) !== type) continue;
    const values = walk(attrs, parts[1].valueStart, parts[1].end);
    // RFC 5652 section 11: content-type and message-digest hold exactly one value, once.
    if (found || !values || values.length !== 1)
      throw problem('cms_malformed', 'a signed attribute must have one value');
    found = { tag: values[0].tag, bytes: attrs.subarray(values[0].valueStart, values[0].end) };
  }
  return found;
}

/** The public key that checks a signer, and the certificate it comes from (when one does). */
export interface SignerKey {
  pub: KeyObject;
  certificate: Buffer | null;
  /** True when the key comes from a certificate the message carries, not from the tenant. */
  carried: boolean;
}

/**
 * The public key that verifies a CMS signer: a tenant key of the signer's identifier when the
 * tenant holds one (its own key pair, or a certificate imported to verify only), else the
 * certificate the message carries for that identifier. Never a certificate from the message over
 * a tenant key: a message can carry a look-alike certificate (same issuer and serial, another
 * key). A message whose certificates all name someone else is cms-signer-certificate-mismatch;
 * one with none, for a signer the tenant does not know, cms-key-not-imported.
 */
export function signerKey(
  desc: SignerDescription,
  certs: ParsedCertificate[],
  own: { pub: KeyObject; certificate: Buffer | null } | null,
): SignerKey {
  if (own) return { ...own, carried: false };
  const cert = matchCertificate(certs, desc.ref);
  if (cert) return { pub: certificatePublicKey(cert.der), certificate: cert.der, carried: true };
  if (certs.length > 0)
    throw problem(
      'cms_signer_certificate_mismatch',
      `none of the ${certs.length} certificate(s) the SignedData carries matches the signer identifier, and the tenant has no key or certificate for it`,
      { details: { identifier: desc.identifier } },
    );
  throw problem(
    'cms_key_not_imported',
    "the SignedData carries no certificate for its signer and the tenant has none: import the signer's certificate (verify-only)",
    { details: { identifier: desc.identifier } },
  );
}

const SIGNING_TIME = '1.2.840.113549.1.9.5';

/** The signing-time attribute (RFC 5652 section 11.3) as an ISO instant, or null. */
export function signingTimeOf(desc: SignerDescription): string | null {
  if (!desc.signedAttrs) return null;
  const v = attributeNode(desc.signedAttrs, SIGNING_TIME);
  if (!v) return null;
  const t = v.bytes.toString('latin1');
  // UTCTime YYMMDDHHMMSSZ (years 1950 to 2049), GeneralizedTime YYYYMMDDHHMMSSZ.
  const m =
    v.tag === 0x17
      ? /^(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})Z$/.exec(t)
      : /^(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})Z$/.exec(t);
  if (!m) return null;
  const year = v.tag === 0x17 ? (Number(m[1]) < 50 ? 2000 : 1900) + Number(m[1]) : Number(m[1]);
  const d = new Date(Date.UTC(year, +m[2] - 1, +m[3], +m[4], +m[5], +m[6]));
  return Number.isNaN(d.getTime()) ? null : d.toISOString();
}

/**
 * A signature over the content digest alone (no signed attributes), checked with the shared
 * over-digest primitives: the strict encode-and-compare of PKCS#1 v1.5, the full EMSA-PSS checks,
 * and ECDSA on strict DER (RFC 5753 section 7.2), so no lenient parser stands before `true`.
 */
function verifyOverDigest(
  scheme: SignatureScheme,
  pub: KeyObject,
  digest: Buffer,
  sig: Buffer,
): boolean {
  if (!isDigestHash(scheme.hash)) return false;
  // An id-RSASSA-PSS key's own parameters bind its signatures (RFC 4055 section 3.3), as OpenSSL
  // enforces on the signed-attributes path: its hash, and its salt length as the least.
  const bound = pub.asymmetricKeyType === 'rsa-pss' ? pub.asymmetricKeyDetails : undefined;
  if (
    bound &&
    ((bound.hashAlgorithm !== undefined && bound.hashAlgorithm !== scheme.hash) ||
      (scheme.saltLength ?? 20) < (bound.saltLength ?? 0))
  )
    return false;
  if (scheme.kind === 'rsa') return pkcs1VerifyDigest(pub, scheme.hash, digest, sig);
  // RFC 4055 section 3.1: the saltLength default is 20.
  if (scheme.kind === 'pss')
    return pssVerifyDigest(pub, scheme.hash, digest, sig, scheme.saltLength ?? 20);
  const crv = scheme.kind === 'ecdsa' ? joseCurveOf(pub) : undefined;
  if (!crv) return false;
  let p1363: Buffer;
  try {
    p1363 = derToP1363(sig, curveSize(crv));
  } catch {
    return false;
  }
  return ecdsaVerifyDigest(pub, crv, digest, p1363);
}

/**
 * Verifies the signer against the content digests (RFC 5652 section 5.6): with signed attributes,
 * the message-digest and content-type attributes and the signature over their DER; without, the
 * signature over the content digest itself. Throws cms-signature-invalid on any mismatch.
 */
export function verifySigner(
  desc: SignerDescription,
  signature: Buffer,
  digests: Map<string, Buffer>,
  eContentType: string,
  pub: KeyObject,
): void {
  if (desc.unsupported) throw problem('cms_unsupported', `${desc.unsupported} is not supported`);
  const scheme = desc.scheme!;
  const digest = digests.get(desc.digestOid);
  if (!digest)
    throw problem(
      'cms_malformed',
      `the signer digest algorithm ${oidName(desc.digestOid)} is not among the declared digestAlgorithms`,
    );
  const bad = (why: string) =>
    problem('cms_signature_invalid', `the CMS signature does not verify: ${why}`);
  let ok: boolean;
  if (desc.signedAttrs) {
    const md = attributeValue(desc.signedAttrs, OID.messageDigestAttr);
    if (!md || md.length !== digest.length || !timingSafeEqual(md, digest))
      throw bad('the content digest differs from the message-digest attribute');
    const ct = attributeValue(desc.signedAttrs, OID.contentTypeAttr);
    if (!ct || decodeOid(ct) !== eContentType)
      throw bad('the content-type attribute differs from the content type');
    // The key alone where no option is needed (DER is the default encoding): given an options
    // object, Node first tests that as a KeyObject, which costs about as much as the RSA check.
    const opts =
      scheme.kind === 'pss'
        ? {
            key: pub,
            padding: constants.RSA_PKCS1_PSS_PADDING,
            saltLength: scheme.saltLength ?? 20,
          }
        : pub;
    try {
      ok = verify(
        scheme.kind === 'ed25519' || scheme.kind === 'ed448' ? null : scheme.hash,
        desc.signedAttrs,
        opts,
        signature,
      );
    } catch {
      ok = false;
    }
  } else {
    // The signature is over the content itself, of which the digest is held (the content too for Ed448).
    if (cmsDigestName(desc.digestOid) !== scheme.hash)
      throw problem('cms_unsupported', 'a signature hash that differs from the digest algorithm');
    if (scheme.kind === 'ed448') {
      const content = digests.get(HELD_CONTENT);
      if (!content)
        throw problem(
          'cms_eddsa_too_large',
          `an Ed448 signature without signed attributes is checked over the whole content, held up to ${PURE_EDDSA_CAP} bytes; this content is larger`,
        );
      try {
        ok = pub.asymmetricKeyType === 'ed448' && verify(null, content, pub, signature);
      } catch {
        ok = false;
      }
    } else ok = verifyOverDigest(scheme, pub, digest, signature);
  }
  if (!ok) throw bad('signature mismatch');
}
