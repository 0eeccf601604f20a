/** How a CMS message names a key (RFC 5652 sections 5.3 and 6.2): the lookup reference and its printable form. */
import { AsnConvert } from '@peculiar/asn1-schema';
import type { IssuerAndSerialNumber } from '@peculiar/asn1-cms';
import { hex, unsignedInteger } from '../asn1/der.ts';
import { formatName } from '../asn1/name.ts';
import type { CmsKeyRef, IdentifierSummary } from './types.ts';

/** The lookup reference and printable form of an IssuerAndSerialNumber. */
export function issuerSerialRef(ias: IssuerAndSerialNumber): {
  ref: CmsKeyRef;
  summary: IdentifierSummary;
} {
  const serial = unsignedInteger(ias.serialNumber);
  return {
    ref: { issuer: Buffer.from(AsnConvert.serialize(ias.issuer)), serialNumber: serial },
    summary: {
      type: 'issuerAndSerialNumber',
      issuer: formatName(ias.issuer),
      serialNumber: hex(serial),
    },
  };
}

/** The lookup reference and printable form of a subject key identifier. */
export function skiRef(ski: ArrayBuffer | Uint8Array): {
  ref: CmsKeyRef;
  summary: IdentifierSummary;
} {
  const b = Buffer.from(ski instanceof Uint8Array ? ski : new Uint8Array(ski));
  return {
    ref: { subjectKeyIdentifier: b },
    summary: { type: 'subjectKeyIdentifier', subjectKeyIdentifier: hex(b) },
  };
}
