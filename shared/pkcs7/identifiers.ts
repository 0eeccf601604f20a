/** How a CMS message names a key (RFC 5652 sections 5.3 and 6.2): the lookup reference and its printable form. */
import { AsnConvert } from '@peculiar/asn1-schema';
import type { IssuerAndSerialNumber } from '@peculiar/asn1-cms';
import type { Name } from '@peculiar/asn1-x509';
import { hex, unsignedInteger } from '../asn1/der.ts';
import { formatName } from '../asn1/name.ts';
import type { CmsKeyRef, IdentifierSummary } from './types.ts';

/**
 * An issuer Name's DER and printable form, made once per parsed Name: the plain reader hands
 * every message of one signer or recipient the same Name object (shared/pkcs7/der-elements.ts),
 * and nothing changes a parsed Name.
 */
const issuerForms = new WeakMap<Name, { der: Buffer; text: string }>();

function formsOf(issuer: Name): { der: Buffer; text: string } {
  let forms = issuerForms.get(issuer);
  if (!forms) {
    forms = { der: Buffer.from(AsnConvert.serialize(issuer)), text: formatName(issuer) };
    issuerForms.set(issuer, forms);
  }
  return forms;
}

/** The lookup reference and printable form of an IssuerAndSerialNumber. */
export function issuerSerialRef(ias: IssuerAndSerialNumber): {
  ref: CmsKeyRef;
  summary: IdentifierSummary;
} {
  const serial = unsignedInteger(ias.serialNumber);
  const issuer = formsOf(ias.issuer);
  return {
    // A copy: a reference travels to resolvers and other threads.
    ref: { issuer: Buffer.from(issuer.der), serialNumber: serial },
    summary: {
      type: 'issuerAndSerialNumber',
      issuer: issuer.text,
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
