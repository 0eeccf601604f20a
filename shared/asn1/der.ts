/**
 * The one set of ASN.1 helpers for the keystore reader and the CMS engine: a bounded whole-buffer
 * parse with the @peculiar schemas (for untrusted bytes of a known, small size), and small
 * synchronous DER helpers (walk, tlv, OIDs, INTEGERs). The streaming reader for content of any
 * size is ber-reader.ts; both have limits, so no input makes either run away.
 */
import { AsnConvert, OctetString } from '@peculiar/asn1-schema';
import { problem } from '../errors/index.ts';

/**
 * asn1js options for untrusted input: no speculative parsing of every OCTET STRING's contents
 * as ASN.1 (PKCS#12 and CMS nest their layers in OCTET STRINGs, each parsed on its own here, so
 * the speculation only multiplies work), and bounded depth and node count.
 */
export const ASN1_LIMITS = { berOptions: { parseEmbedded: false, maxDepth: 32, maxNodes: 20_000 } };

/** The problem a malformed element is, per format: which reader met it. */
export type MalformedCode = 'cms_malformed' | 'keystore_malformed';

/** Parses DER (or BER) with a schema under ASN1_LIMITS; any failure is `code`, naming `what`. */
export function parseAsn<T>(
  data: ArrayBuffer | ArrayBufferView,
  type: new () => T,
  what: string,
  code: MalformedCode,
): T {
  try {
    return AsnConvert.parse(data, type, ASN1_LIMITS);
  } catch (cause) {
    throw problem(code, `${what} is not valid DER`, { cause });
  }
}

/**
 * OCTET STRING that also reads the BER constructed form (X.690 section 8.7.3.2), which some
 * PKCS#12 writers emit and which asn1-schema's own OctetString silently reads as empty.
 */
export class BerOctetString extends OctetString {
  override fromASN(asn: Parameters<OctetString['fromASN']>[0]): this {
    this.buffer = asn.getValue();
    return this;
  }
}

/** The octets of an OCTET STRING encoding (primitive or constructed). */
export function octets(
  data: ArrayBuffer | ArrayBufferView,
  what: string,
  code: MalformedCode,
): Buffer {
  return Buffer.from(parseAsn(data, BerOctetString, what, code).buffer);
}

/** DER length octets (X.690 section 8.1.3). */
export function encodeLength(n: number): Buffer {
  if (n < 0x80) return Buffer.from([n]);
  const bytes: number[] = [];
  for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v % 256);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

/** One DER TLV from a tag byte and a value. */
export function tlv(tag: number, value: Uint8Array): Buffer {
  return Buffer.concat([Buffer.from([tag]), encodeLength(value.length), value]);
}

/** A TLV found by walk(): where its value lies in the walked buffer. */
export interface DerNode {
  tag: number;
  /** Offset of the tag byte. */
  start: number;
  /** Offset of the value. */
  valueStart: number;
  end: number;
}

/** The top-level TLVs of a definite-length buffer; null when it is not walkable DER. */
export function walk(buf: Uint8Array, from = 0, to = buf.length): DerNode[] | null {
  const out: DerNode[] = [];
  let p = from;
  while (p < to) {
    const start = p;
    if (p + 2 > to) return null;
    const tag = buf[p++];
    if ((tag & 0x1f) === 0x1f) return null;
    let len = buf[p++];
    if (len === 0x80) return null;
    if (len > 0x80) {
      const n = len & 0x7f;
      if (n > 4 || p + n > to) return null;
      len = 0;
      for (let i = 0; i < n; i++) len = len * 256 + buf[p++];
    }
    if (p + len > to) return null;
    out.push({ tag, start, valueStart: p, end: p + len });
    p += len;
  }
  return out;
}

/** The unsigned big-endian form of a DER INTEGER value (drops the sign byte). */
export function unsignedInteger(value: ArrayBuffer | Uint8Array): Buffer {
  let b = Buffer.from(value instanceof Uint8Array ? value : new Uint8Array(value));
  while (b.length > 1 && b[0] === 0) b = b.subarray(1);
  return Buffer.from(b);
}

/** Upper-case hex, the way X.509 tools print serial numbers. */
export function hex(b: Uint8Array): string {
  return Buffer.from(b).toString('hex').toUpperCase();
}

/** Encodes a dotted OID as DER content octets (X.690 section 8.19). */
export function encodeOid(oid: string): Buffer {
  const parts = oid.split('.').map(Number);
  const out: number[] = [parts[0] * 40 + parts[1]];
  for (const n of parts.slice(2)) {
    const bytes = [n & 0x7f];
    for (let v = Math.floor(n / 128); v > 0; v = Math.floor(v / 128))
      bytes.unshift((v & 0x7f) | 0x80);
    out.push(...bytes);
  }
  return Buffer.from(out);
}

/** Decodes DER OID content octets to dotted form. */
export function decodeOid(value: Uint8Array): string {
  if (value.length === 0) throw problem('cms_malformed', 'empty OBJECT IDENTIFIER');
  const parts: number[] = [];
  let n = 0;
  for (let i = 0; i < value.length; i++) {
    n = n * 128 + (value[i] & 0x7f);
    if ((value[i] & 0x80) === 0) {
      if (parts.length === 0) parts.push(n < 80 ? Math.floor(n / 40) : 2, n < 80 ? n % 40 : n - 80);
      else parts.push(n);
      n = 0;
    } else if (n > Number.MAX_SAFE_INTEGER / 128) {
      throw problem('cms_malformed', 'OBJECT IDENTIFIER arc too large');
    }
  }
  if (value[value.length - 1] & 0x80) throw problem('cms_malformed', 'truncated OBJECT IDENTIFIER');
  return parts.join('.');
}
