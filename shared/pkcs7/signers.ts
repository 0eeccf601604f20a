/**
 * Signer side of SignedData (RFC 5652 section 5): identifiers, the digests computed while the
 * content streams, and the verification of the one signature once the SignerInfo (which follows
 * the content) has been read.
 */
import { constants, createHash, createPublicKey, publicDecrypt, timingSafeEqual, verify } from 'node:crypto';
import type { Hash, KeyObject } from 'node:crypto';
import { RsaSaPssParams } from '@peculiar/asn1-rsa';
import { AlgorithmIdentifier } from '@peculiar/asn1-x509';
import type { AlgorithmIdentifier as AlgId } from '@peculiar/asn1-x509';
import { certificatePublicKey, matchCertificate, parseCertificate } from './certificates.ts';
import type { ParsedCertificate } from './certificates.ts';
import { signedAttrsDer } from './cms-structure.ts';
import type { CapturedSigner } from './cms-structure.ts';
import { decodeOid, issuerSerialRef, parseAsn, skiRef, walk } from './der.ts';
import { DIGESTS, OID, oidName } from './oids.ts';
import { cmsProblem } from './problems.ts';
import { ecdsaVerifyDigest } from './ecdsa-digest.ts';
import type { CmsKeyRef, IdentifierSummary, ResolvedKey } from './types.ts';

/** How a signature was made, from SignerInfo.signatureAlgorithm. */
export interface SignatureScheme {
  kind: 'rsa' | 'pss' | 'ecdsa' | 'ed25519';
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

const RSA_HASH: Record<string, string> = { [OID.sha1WithRSA]: 'sha1', [OID.sha256WithRSA]: 'sha256', [OID.sha384WithRSA]: 'sha384', [OID.sha512WithRSA]: 'sha512' };
const ECDSA_HASH: Record<string, string> = { [OID.ecdsaSha1]: 'sha1', [OID.ecdsaSha256]: 'sha256', [OID.ecdsaSha384]: 'sha384', [OID.ecdsaSha512]: 'sha512' };

function schemeOf(sigAlg: AlgId, digestOid: string): SignatureScheme | null {
  const oid = sigAlg.algorithm;
  const digest = DIGESTS[digestOid];
  if (oid === OID.rsaEncryption) return digest ? { kind: 'rsa', hash: digest } : null;
  if (RSA_HASH[oid]) return { kind: 'rsa', hash: RSA_HASH[oid] };
  if (ECDSA_HASH[oid]) return { kind: 'ecdsa', hash: ECDSA_HASH[oid] };
  if (oid === OID.ecPublicKey) return digest ? { kind: 'ecdsa', hash: digest } : null;
  if (oid === OID.ed25519) return { kind: 'ed25519', hash: 'sha512' };
  if (oid === OID.rsassaPss) {
    const p = sigAlg.parameters ? parseAsn(new Uint8Array(sigAlg.parameters), RsaSaPssParams, 'RSASSA-PSS parameters') : new RsaSaPssParams();
    const hash = DIGESTS[p.hashAlgorithm.algorithm];
    const mgf = p.maskGenAlgorithm.parameters ? parseAsn(new Uint8Array(p.maskGenAlgorithm.parameters), AlgorithmIdentifier, 'MGF1 hash').algorithm : OID.sha1;
    // Node signs and verifies PSS with MGF1 over the same hash (RFC 8017 section 9.1 permits others).
    if (!hash || mgf !== p.hashAlgorithm.algorithm || p.trailerField !== 1) return null;
    return { kind: 'pss', hash, saltLength: p.saltLength };
  }
  return null;
}

/** Describes one SignerInfo for the analysis, key lookup and verification. */
export function describeSigner(s: CapturedSigner): SignerDescription {
  const sid = s.info.sid;
  const id = sid.issuerAndSerialNumber ? issuerSerialRef(sid.issuerAndSerialNumber) : skiRef(sid.subjectKeyIdentifier!.buffer);
  const digestOid = s.info.digestAlgorithm.algorithm;
  const signatureOid = s.info.signatureAlgorithm.algorithm;
  const scheme = schemeOf(s.info.signatureAlgorithm, digestOid);
  const d: SignerDescription = { ref: id.ref, identifier: id.summary, digestOid, signatureOid, scheme, signedAttrs: signedAttrsDer(s) };
  if (!DIGESTS[digestOid]) d.unsupported = `digest algorithm ${oidName(digestOid)}`;
  else if (!scheme) d.unsupported = `signature algorithm ${oidName(signatureOid)}`;
  else if (!d.signedAttrs && scheme.kind === 'ed25519') d.unsupported = 'Ed25519 signatures without signed attributes';
  return d;
}

/** The digests of the content for every algorithm SignedData.digestAlgorithms declares. */
export class ContentDigests {
  #hashes = new Map<string, Hash>();

  constructor(digestOids: string[]) {
    for (const oid of digestOids) {
      const name = DIGESTS[oid];
      if (name && !this.#hashes.has(oid)) this.#hashes.set(oid, createHash(name));
    }
    // A SignedData that declares none still has a signer digest; SHA-256 is the CMS default in practice.
    if (this.#hashes.size === 0) this.#hashes.set(OID.sha256, createHash('sha256'));
  }

  update(chunk: Buffer): void {
    for (const h of this.#hashes.values()) h.update(chunk);
  }

  /** Finishes every digest. */
  digest(): Map<string, Buffer> {
    const out = new Map<string, Buffer>();
    for (const [oid, h] of this.#hashes) out.set(oid, h.digest());
    return out;
  }
}

function attributeValue(attrs: Buffer, type: string): Buffer | null {
  const set = walk(attrs);
  const items = set && set.length === 1 ? walk(attrs, set[0].valueStart, set[0].end) : null;
  if (!items) throw cmsProblem('cms_malformed', 'malformed signed attributes');
  let found: Buffer | null = null;
  for (const item of items) {
    const parts = walk(attrs, item.valueStart, item.end);
    if (!parts || parts.length !== 2 || parts[0].tag !== 0x06) throw cmsProblem('cms_malformed', 'malformed signed attribute');
    if (decodeOid(attrs.subarray(parts[0].valueStart, parts[0].end)) !== type) continue;
    const values = walk(attrs, parts[1].valueStart, parts[1].end);
    // RFC 5652 section 11: content-type and message-digest hold exactly one value, once.
    if (found || !values || values.length !== 1) throw cmsProblem('cms_malformed', 'a signed attribute must have one value');
    found = attrs.subarray(values[0].valueStart, values[0].end);
  }
  return found;
}

/**
 * The public key that verifies the CMS signature: the tenant key that will re-sign, when known,
 * else the signer's certificate. Never a certificate from the message over the tenant key: a
 * message can carry a look-alike certificate (same issuer and serial, another key), and
 * trusting it would let anyone have the tenant key sign content of their choosing.
 */
export function verificationKey(desc: SignerDescription, certificates: Buffer[], key: ResolvedKey | null): KeyObject {
  if (key?.publicKey) return key.publicKey;
  if (key?.privateKey) return createPublicKey(key.privateKey);
  if (key?.certificate) return certificatePublicKey(key.certificate);
  const certs = certificates.map(parseCertificate).filter((c): c is ParsedCertificate => c !== null);
  const cert = matchCertificate(certs, desc.ref);
  if (cert) return certificatePublicKey(cert.der);
  throw cmsProblem('cms_key_not_imported', 'no certificate or imported key to verify the CMS signature', { details: { identifier: desc.identifier } });
}

function digestInfoMatches(decoded: Buffer, hash: string, digest: Buffer): boolean {
  const top = walk(decoded);
  const parts = top && top.length === 1 ? walk(decoded, top[0].valueStart, top[0].end) : null;
  if (!parts || parts.length !== 2 || parts[1].tag !== 0x04) return false;
  const alg = walk(decoded, parts[0].valueStart, parts[0].end);
  if (!alg || alg[0].tag !== 0x06) return false;
  const oid = decodeOid(decoded.subarray(alg[0].valueStart, alg[0].end));
  const value = decoded.subarray(parts[1].valueStart, parts[1].end);
  return DIGESTS[oid] === hash && value.length === digest.length && timingSafeEqual(value, digest);
}

/** EMSA-PSS-VERIFY over a precomputed digest (RFC 8017 section 9.1.2), MGF1 with the same hash. */
function pssVerifyDigest(pub: KeyObject, hash: string, digest: Buffer, sig: Buffer, saltLength: number): boolean {
  const modBits = pub.asymmetricKeyDetails?.modulusLength ?? 0;
  let em: Buffer;
  try {
    em = publicDecrypt({ key: pub, padding: constants.RSA_NO_PADDING }, sig);
  } catch {
    return false;
  }
  const emBits = modBits - 1;
  const emLen = Math.ceil(emBits / 8);
  if (em.length > emLen) {
    if (em[0] !== 0) return false;
    em = em.subarray(em.length - emLen);
  }
  const hLen = digest.length;
  if (emLen < hLen + saltLength + 2 || em[emLen - 1] !== 0xbc) return false;
  const maskedDb = em.subarray(0, emLen - hLen - 1);
  const h = em.subarray(emLen - hLen - 1, emLen - 1);
  const mask: Buffer[] = [];
  for (let c = 0, have = 0; have < maskedDb.length; c++) {
    const ctr = Buffer.alloc(4);
    ctr.writeUInt32BE(c);
    const block = createHash(hash).update(h).update(ctr).digest();
    mask.push(block);
    have += block.length;
  }
  const dbMask = Buffer.concat(mask);
  const db = Buffer.alloc(maskedDb.length);
  for (let i = 0; i < db.length; i++) db[i] = maskedDb[i] ^ dbMask[i];
  db[0] &= 0xff >> (8 * emLen - emBits);
  const psLen = emLen - hLen - saltLength - 2;
  for (let i = 0; i < psLen; i++) if (db[i] !== 0) return false;
  if (db[psLen] !== 1) return false;
  const salt = db.subarray(db.length - saltLength);
  const h2 = createHash(hash).update(Buffer.alloc(8)).update(digest).update(salt).digest();
  return timingSafeEqual(h, h2);
}

function verifyOverDigest(scheme: SignatureScheme, pub: KeyObject, digest: Buffer, sig: Buffer): boolean {
  if (scheme.kind === 'rsa') {
    try {
      return digestInfoMatches(publicDecrypt({ key: pub, padding: constants.RSA_PKCS1_PADDING }, sig), scheme.hash, digest);
    } catch {
      return false;
    }
  }
  if (scheme.kind === 'pss') return pssVerifyDigest(pub, scheme.hash, digest, sig, scheme.saltLength ?? 20);
  if (scheme.kind === 'ecdsa') return ecdsaVerifyDigest(pub, digest, sig);
  return false;
}

/**
 * Verifies the signer against the content digests (RFC 5652 section 5.6): with signed attributes,
 * the message-digest and content-type attributes and the signature over their DER; without, the
 * signature over the content digest itself. Throws cms-signature-invalid on any mismatch.
 */
export function verifySigner(desc: SignerDescription, signature: Buffer, digests: Map<string, Buffer>, eContentType: string, pub: KeyObject): void {
  if (desc.unsupported) throw cmsProblem('cms_unsupported', `${desc.unsupported} is not supported`);
  const scheme = desc.scheme!;
  const digest = digests.get(desc.digestOid);
  if (!digest) throw cmsProblem('cms_malformed', `the signer digest algorithm ${oidName(desc.digestOid)} is not among the declared digestAlgorithms`);
  const bad = (why: string) => cmsProblem('cms_signature_invalid', `the CMS signature does not verify: ${why}`);
  let ok: boolean;
  if (desc.signedAttrs) {
    const md = attributeValue(desc.signedAttrs, OID.messageDigestAttr);
    if (!md || md.length !== digest.length || !timingSafeEqual(md, digest)) throw bad('the content digest differs from the message-digest attribute');
    const ct = attributeValue(desc.signedAttrs, OID.contentTypeAttr);
    if (!ct || decodeOid(ct) !== eContentType) throw bad('the content-type attribute differs from the content type');
    const opts = { key: pub, dsaEncoding: 'der' as const, ...(scheme.kind === 'pss' ? { padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: scheme.saltLength ?? 20 } : {}) };
    try {
      ok = verify(scheme.kind === 'ed25519' ? null : scheme.hash, desc.signedAttrs, opts, signature);
    } catch {
      ok = false;
    }
  } else {
    // The signature is over the content itself, whose digest is the only thing held.
    if (DIGESTS[desc.digestOid] !== scheme.hash) throw cmsProblem('cms_unsupported', 'a signature hash that differs from the digest algorithm');
    ok = verifyOverDigest(scheme, pub, digest, signature);
  }
  if (!ok) throw bad('signature mismatch');
}
