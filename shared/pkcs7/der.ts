/** Small synchronous DER helpers for the captured (small) parts of a CMS message. */
import { AsnConvert } from '@peculiar/asn1-schema';
import type { Name } from '@peculiar/asn1-x509';
import type { IssuerAndSerialNumber } from '@peculiar/asn1-cms';
import { cmsProblem } from './problems.ts';
import type { CmsKeyRef, IdentifierSummary } from './types.ts';

/** Parses DER (or BER) of one small element with an @peculiar/asn1 class; failures are cms-malformed. */
export function parseAsn<T>(der: Uint8Array, cls: new () => T, what: string): T {
  try {
    return AsnConvert.parse(der, cls);
  } catch (err) {
    throw cmsProblem('cms_malformed', `cannot decode the ${what}`, { cause: err });
  }
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

const RDN_NAMES: Record<string, string> = {
  '2.5.4.3': 'CN',
  '2.5.4.6': 'C',
  '2.5.4.7': 'L',
  '2.5.4.8': 'ST',
  '2.5.4.10': 'O',
  '2.5.4.11': 'OU',
  '2.5.4.5': 'serialNumber',
  '0.9.2342.19200300.100.1.25': 'DC',
  '1.2.840.113549.1.9.1': 'emailAddress',
};

/** A Name in RFC 4514 order (most specific RDN first), e.g. "CN=signer,O=Acme,C=FR". */
export function nameToString(name: Name): string {
  return [...name]
    .reverse()
    .map((rdn) => rdn.map((atv) => `${RDN_NAMES[atv.type] ?? atv.type}=${atv.value.toString()}`).join('+'))
    .join(',');
}

/** The lookup reference and printable form of an IssuerAndSerialNumber. */
export function issuerSerialRef(ias: IssuerAndSerialNumber): { ref: CmsKeyRef; summary: IdentifierSummary } {
  const serial = unsignedInteger(ias.serialNumber);
  return {
    ref: { issuer: Buffer.from(AsnConvert.serialize(ias.issuer)), serialNumber: serial },
    summary: { type: 'issuerAndSerialNumber', issuer: nameToString(ias.issuer), serialNumber: hex(serial) },
  };
}

/** The lookup reference and printable form of a subject key identifier. */
export function skiRef(ski: ArrayBuffer | Uint8Array): { ref: CmsKeyRef; summary: IdentifierSummary } {
  const b = Buffer.from(ski instanceof Uint8Array ? ski : new Uint8Array(ski));
  return { ref: { subjectKeyIdentifier: b }, summary: { type: 'subjectKeyIdentifier', subjectKeyIdentifier: hex(b) } };
}

/** Encodes a dotted OID as DER content octets (X.690 section 8.19). */
export function encodeOid(oid: string): Buffer {
  const parts = oid.split('.').map(Number);
  const out: number[] = [parts[0] * 40 + parts[1]];
  for (const n of parts.slice(2)) {
    const bytes = [n & 0x7f];
    for (let v = Math.floor(n / 128); v > 0; v = Math.floor(v / 128)) bytes.unshift((v & 0x7f) | 0x80);
    out.push(...bytes);
  }
  return Buffer.from(out);
}

/** Decodes DER OID content octets to dotted form. */
export function decodeOid(value: Uint8Array): string {
  if (value.length === 0) throw cmsProblem('cms_malformed', 'empty OBJECT IDENTIFIER');
  const parts: number[] = [];
  let n = 0;
  for (let i = 0; i < value.length; i++) {
    n = n * 128 + (value[i] & 0x7f);
    if ((value[i] & 0x80) === 0) {
      if (parts.length === 0) parts.push(n < 80 ? Math.floor(n / 40) : 2, n < 80 ? n % 40 : n - 80);
      else parts.push(n);
      n = 0;
    } else if (n > Number.MAX_SAFE_INTEGER / 128) {
      throw cmsProblem('cms_malformed', 'OBJECT IDENTIFIER arc too large');
    }
  }
  if (value[value.length - 1] & 0x80) throw cmsProblem('cms_malformed', 'truncated OBJECT IDENTIFIER');
  return parts.join('.');
}
