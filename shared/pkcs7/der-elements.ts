/**
 * The SignerInfo, key-transport RecipientInfo and AlgorithmIdentifiers every message carries, read by a DER walk into
 * the same @peculiar/asn1-cms objects the schema parser makes, without building an asn1js tree
 * first (that tree was about a fifth of a small signed message's conversion). Only a narrow,
 * plain DER form is read here: anything else (BER, another choice, an unusual element, a size
 * or nesting past a small bound) answers null and the caller parses it with the schema as before,
 * so what is accepted, refused and produced does not change. The issuer Name, the same in every
 * message of one signer or recipient, is parsed by the schema once while it is in use. See
 * docs/pkcs7-performance.md.
 */
import {
  Attribute,
  DigestAlgorithmIdentifier,
  IssuerAndSerialNumber,
  KeyEncryptionAlgorithmIdentifier,
  KeyTransRecipientInfo,
  RecipientIdentifier,
  RecipientInfo,
  SignatureAlgorithmIdentifier,
  SignerIdentifier,
  SignerInfo,
} from '@peculiar/asn1-cms';
import { AsnConvert, OctetString } from '@peculiar/asn1-schema';
import { AlgorithmIdentifier, Name } from '@peculiar/asn1-x509';
import { ASN1_LIMITS, decodeOid } from '../asn1/der.ts';

/** Most issuer Names held parsed at once. */
export const NAME_CACHE_SIZE = 256;
/**
 * Bounds of the plain form, well inside the schema parser's own (ASN1_LIMITS: 20,000 nodes,
 * depth 32), so nothing the schema parser would refuse for its size is read here.
 */
const MAX_NODES = 2_000;
const MAX_DEPTH = 12;

interface Tlv {
  tag: number;
  start: number;
  valueStart: number;
  end: number;
}

/** One TLV at `p` in DER: a one-byte tag, a definite length in its shortest form. */
function tlvAt(b: Uint8Array, p: number, to: number): Tlv | null {
  if (p + 2 > to) return null;
  const start = p;
  const tag = b[p++];
  if ((tag & 0x1f) === 0x1f) return null;
  let len = b[p++];
  if (len >= 0x80) {
    const n = len & 0x7f;
    if (n === 0 || n > 3 || p + n > to || b[p] === 0) return null;
    len = 0;
    for (let i = 0; i < n; i++) len = len * 256 + b[p++];
    if (len < 0x80) return null;
  }
  if (p + len > to) return null;
  return { tag, start, valueStart: p, end: p + len };
}

/** The elements inside a constructed TLV, or null when they do not exactly fill it. */
function kids(b: Uint8Array, t: Tlv): Tlv[] | null {
  const out: Tlv[] = [];
  for (let p = t.valueStart; p < t.end;) {
    const k = tlvAt(b, p, t.end);
    if (!k) return null;
    out.push(k);
    p = k.end;
  }
  return out;
}

/** An OBJECT IDENTIFIER in its shortest form, each arc under 2^28, or null. */
function oidOf(b: Uint8Array, t: Tlv): string | null {
  if (t.tag !== 0x06 || t.end === t.valueStart) return null;
  let run = 0;
  for (let i = t.valueStart; i < t.end; i++) {
    if (run === 0 && b[i] === 0x80) return null;
    run = b[i] & 0x80 ? run + 1 : 0;
    if (run > 3) return null;
  }
  if (run !== 0) return null;
  return decodeOid(b.subarray(t.valueStart, t.end));
}

const UTC_TIME = /^\d{12}Z$/;

/** What plain() walks with: the node budget, and the issuer Name the schema checks itself. */
interface Walk {
  nodes: number;
  issuer: number;
}

/** Counts the elements of the issuer Name, which the schema parses and checks on its own. */
function counted(b: Uint8Array, t: Tlv, depth: number, w: Walk): boolean {
  if (++w.nodes > MAX_NODES || depth > MAX_DEPTH) return false;
  if (!(t.tag & 0x20)) return true;
  const inner = kids(b, t);
  return inner !== null && inner.every((k) => counted(b, k, depth + 1, w));
}

/**
 * Whether everything under `t` is of the plain kinds this reader vouches for: SEQUENCE, SET and
 * context-specific constructed elements over INTEGER, OCTET STRING, NULL, OBJECT IDENTIFIER and
 * UTCTime as the signing time writes it (the issuer Name aside).
 */
function plain(b: Uint8Array, t: Tlv, depth: number, w: Walk): boolean {
  if (t.start === w.issuer) return counted(b, t, depth, w);
  if (++w.nodes > MAX_NODES || depth > MAX_DEPTH) return false;
  const len = t.end - t.valueStart;
  switch (t.tag) {
    case 0x30:
    case 0x31:
    case 0xa0:
    case 0xa1:
    case 0xa2:
    case 0xa3: {
      const inner = kids(b, t);
      return inner !== null && inner.every((k) => plain(b, k, depth + 1, w));
    }
    case 0x02:
      return len > 0;
    case 0x04:
      return true;
    case 0x05:
      return len === 0;
    case 0x06:
      try {
        return oidOf(b, t) !== null;
      } catch {
        return false;
      }
    case 0x17:
      return UTC_TIME.test(
        Buffer.from(b.buffer, b.byteOffset + t.valueStart, len).toString('latin1'),
      );
    default:
      return false;
  }
}

/** A copy of the bytes as an ArrayBuffer of their own, as the schema parser hands them. */
const copy = (b: Uint8Array, from: number, to: number): ArrayBuffer =>
  b.buffer.slice(b.byteOffset + from, b.byteOffset + to) as ArrayBuffer;

/** A one-byte INTEGER of 0..127 (a CMS version), or null. */
function smallInteger(b: Uint8Array, t: Tlv): number | null {
  return t.tag === 0x02 && t.end - t.valueStart === 1 && b[t.valueStart] < 0x80
    ? b[t.valueStart]
    : null;
}

function algorithm<T extends AlgorithmIdentifier>(
  b: Uint8Array,
  t: Tlv,
  Type: new () => T,
): T | null {
  if (t.tag !== 0x30) return null;
  const f = kids(b, t);
  if (!f || f.length < 1 || f.length > 2) return null;
  const oid = oidOf(b, f[0]);
  if (oid === null) return null;
  const a = new Type();
  a.algorithm = oid;
  // The schema's ANY: NULL is null, anything else the element's own bytes.
  if (f.length === 2) a.parameters = f[1].tag === 0x05 ? null : copy(b, f[1].start, f[1].end);
  return a;
}

/** Issuer Names parsed by the schema, by their DER (least recently used dropped first). */
const names = new Map<string, Name>();

function issuerName(b: Uint8Array, t: Tlv): Name | null {
  const id = Buffer.from(b.buffer, b.byteOffset + t.start, t.end - t.start).toString('latin1');
  const hit = names.get(id);
  if (hit) {
    names.delete(id);
    names.set(id, hit);
    return hit;
  }
  let name: Name;
  try {
    name = AsnConvert.parse(b.subarray(t.start, t.end), Name, ASN1_LIMITS);
  } catch {
    return null;
  }
  names.set(id, name);
  if (names.size > NAME_CACHE_SIZE) names.delete(names.keys().next().value!);
  return name;
}

function issuerAndSerial(b: Uint8Array, t: Tlv): IssuerAndSerialNumber | null {
  if (t.tag !== 0x30) return null;
  const f = kids(b, t);
  if (!f || f.length !== 2 || f[0].tag !== 0x30 || f[1].tag !== 0x02) return null;
  const issuer = issuerName(b, f[0]);
  if (!issuer) return null;
  return new IssuerAndSerialNumber({
    issuer,
    serialNumber: copy(b, f[1].valueStart, f[1].end),
  });
}

function attributes(b: Uint8Array, t: Tlv): Attribute[] | null {
  const items = kids(b, t);
  if (!items) return null;
  const out: Attribute[] = [];
  for (const item of items) {
    if (item.tag !== 0x30) return null;
    const f = kids(b, item);
    if (!f || f.length !== 2 || f[1].tag !== 0x31) return null;
    const attrType = oidOf(b, f[0]);
    const values = kids(b, f[1]);
    if (attrType === null || !values || values.some((v) => v.tag === 0x05)) return null;
    out.push(new Attribute({ attrType, attrValues: values.map((v) => copy(b, v.start, v.end)) }));
  }
  return out;
}

/**
 * The whole buffer as one plain SEQUENCE whose second field is an IssuerAndSerialNumber (the
 * `sid` of a SignerInfo, the `rid` of a KeyTransRecipientInfo), with its fields.
 */
function plainSequence(der: Uint8Array): Tlv[] | null {
  const top = tlvAt(der, 0, der.length);
  if (!top || top.tag !== 0x30 || top.end !== der.length) return null;
  const f = kids(der, top);
  if (!f || f.length < 2 || f[1].tag !== 0x30) return null;
  const ias = kids(der, f[1]);
  if (!ias || ias.length !== 2 || ias[0].tag !== 0x30) return null;
  return plain(der, top, 0, { nodes: 0, issuer: ias[0].start }) ? f : null;
}

/** An AlgorithmIdentifier that is the whole buffer, or null to parse it with the schema. */
export function plainAlgorithm(der: Uint8Array): AlgorithmIdentifier | null {
  try {
    const top = tlvAt(der, 0, der.length);
    if (!top || top.end !== der.length) return null;
    if (!plain(der, top, 0, { nodes: 0, issuer: -1 })) return null;
    return algorithm(der, top, AlgorithmIdentifier);
  } catch {
    return null;
  }
}

/** A SignerInfo identified by issuer and serial number, or null to parse it with the schema. */
export function plainSignerInfo(der: Uint8Array): SignerInfo | null {
  try {
    const f = plainSequence(der);
    if (!f || f.length < 5 || f.length > 7) return null;
    let i = 0;
    const version = smallInteger(der, f[i++]);
    const ias = issuerAndSerial(der, f[i++]);
    const digestAlgorithm = algorithm(der, f[i++], DigestAlgorithmIdentifier);
    if (version === null || !ias || !digestAlgorithm) return null;
    const signedAttrs = f[i].tag === 0xa0 ? attributes(der, f[i++]) : undefined;
    if (signedAttrs === null || i + 2 > f.length) return null;
    const signatureAlgorithm = algorithm(der, f[i++], SignatureAlgorithmIdentifier);
    const sig = f[i++];
    if (!signatureAlgorithm || sig.tag !== 0x04) return null;
    let unsignedAttrs: Attribute[] | null | undefined;
    if (i < f.length) {
      if (f[i].tag !== 0xa1 || i + 1 !== f.length) return null;
      unsignedAttrs = attributes(der, f[i]);
      if (unsignedAttrs === null) return null;
    }
    const info = new SignerInfo({
      version,
      sid: new SignerIdentifier({ issuerAndSerialNumber: ias }),
      digestAlgorithm,
      signatureAlgorithm,
      signature: new OctetString(copy(der, sig.valueStart, sig.end)),
    });
    if (signedAttrs) info.signedAttrs = signedAttrs;
    if (unsignedAttrs) info.unsignedAttrs = unsignedAttrs;
    return info;
  } catch {
    return null;
  }
}

/**
 * A key-transport RecipientInfo identified by issuer and serial number, or null to parse it with
 * the schema.
 */
export function plainRecipientInfo(der: Uint8Array): RecipientInfo | null {
  try {
    const f = plainSequence(der);
    if (!f || f.length !== 4) return null;
    const version = smallInteger(der, f[0]);
    const ias = issuerAndSerial(der, f[1]);
    const keyEncryptionAlgorithm = algorithm(der, f[2], KeyEncryptionAlgorithmIdentifier);
    if (version === null || !ias || !keyEncryptionAlgorithm || f[3].tag !== 0x04) return null;
    return new RecipientInfo({
      ktri: new KeyTransRecipientInfo({
        version,
        rid: new RecipientIdentifier({ issuerAndSerialNumber: ias }),
        keyEncryptionAlgorithm,
        encryptedKey: new OctetString(copy(der, f[3].valueStart, f[3].end)),
      }),
    });
  } catch {
    return null;
  }
}
