/** X.509 certificates carried in a CMS message: matching a signer identifier, and summaries. */
import { AsnConvert } from '@peculiar/asn1-schema';
import { Certificate, SubjectKeyIdentifier } from '@peculiar/asn1-x509';
import { hex, parseAsn, unsignedInteger } from '../asn1/der.ts';
import { formatName } from '../asn1/name.ts';
import { OID } from '../asn1/oids.ts';
import type { CertificateSummary, CmsKeyRef } from './types.ts';

/** A decoded certificate with what identifier matching needs. */
export interface ParsedCertificate {
  der: Buffer;
  cert: Certificate;
  issuer: Buffer;
  serial: Buffer;
  ski: Buffer | null;
}

/** Decodes a certificate; null for CertificateChoices that are not X.509 certificates. */
export function parseCertificate(der: Buffer): ParsedCertificate | null {
  if (der[0] !== 0x30) return null;
  const cert = parseAsn(der, Certificate, 'certificate', 'cms_malformed');
  const tbs = cert.tbsCertificate;
  const ext = tbs.extensions?.find((e) => e.extnID === OID.subjectKeyIdentifier);
  const ski = ext
    ? Buffer.from(
        parseAsn(
          new Uint8Array(ext.extnValue.buffer),
          SubjectKeyIdentifier,
          'subject key identifier',
          'cms_malformed',
        ).buffer,
      )
    : null;
  return {
    der,
    cert,
    issuer: Buffer.from(AsnConvert.serialize(tbs.issuer)),
    serial: unsignedInteger(tbs.serialNumber),
    ski,
  };
}

/** The certificate a CMS identifier names (RFC 5652 section 5.3 SignerIdentifier). */
export function matchCertificate(
  certs: ParsedCertificate[],
  ref: CmsKeyRef,
): ParsedCertificate | null {
  return (
    certs.find((c) =>
      ref.subjectKeyIdentifier
        ? c.ski !== null && c.ski.equals(ref.subjectKeyIdentifier)
        : !!ref.issuer &&
          !!ref.serialNumber &&
          c.issuer.equals(ref.issuer) &&
          c.serial.equals(ref.serialNumber),
    ) ?? null
  );
}

/** Subject, issuer, serial and validity, the fields contract section 4 reports. */
export function certificateSummary(c: ParsedCertificate): CertificateSummary {
  const tbs = c.cert.tbsCertificate;
  return {
    subject: formatName(tbs.subject),
    issuer: formatName(tbs.issuer),
    serialNumber: hex(c.serial),
    notBefore: tbs.validity.notBefore.getTime().toISOString(),
    notAfter: tbs.validity.notAfter.getTime().toISOString(),
  };
}
