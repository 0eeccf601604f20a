/** X.509 certificates carried in a CMS message: matching a signer identifier, and summaries. */
import { X509Certificate } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { AsnConvert } from '@peculiar/asn1-schema';
import { Certificate, SubjectKeyIdentifier } from '@peculiar/asn1-x509';
import { hex, nameToString, parseAsn, unsignedInteger } from './der.ts';
import type { CertificateSummary, CmsKeyRef } from './types.ts';
import { cmsProblem } from './problems.ts';

/** A decoded certificate with what identifier matching needs. */
export interface ParsedCertificate {
  der: Buffer;
  cert: Certificate;
  issuer: Buffer;
  serial: Buffer;
  ski: Buffer | null;
}

const SKI_OID = '2.5.29.14';

/** Decodes a certificate; null for CertificateChoices that are not X.509 certificates. */
export function parseCertificate(der: Buffer): ParsedCertificate | null {
  if (der[0] !== 0x30) return null;
  const cert = parseAsn(der, Certificate, 'certificate');
  const tbs = cert.tbsCertificate;
  const ext = tbs.extensions?.find((e) => e.extnID === SKI_OID);
  const ski = ext ? Buffer.from(parseAsn(new Uint8Array(ext.extnValue.buffer), SubjectKeyIdentifier, 'subject key identifier').buffer) : null;
  return { der, cert, issuer: Buffer.from(AsnConvert.serialize(tbs.issuer)), serial: unsignedInteger(tbs.serialNumber), ski };
}

/** The certificate a CMS identifier names (RFC 5652 section 5.3 SignerIdentifier). */
export function matchCertificate(certs: ParsedCertificate[], ref: CmsKeyRef): ParsedCertificate | null {
  return (
    certs.find((c) =>
      ref.subjectKeyIdentifier
        ? c.ski !== null && c.ski.equals(ref.subjectKeyIdentifier)
        : !!ref.issuer && !!ref.serialNumber && c.issuer.equals(ref.issuer) && c.serial.equals(ref.serialNumber),
    ) ?? null
  );
}

/** The certificate's public key as a KeyObject; a certificate OpenSSL cannot read is malformed CMS. */
export function certificatePublicKey(der: Buffer): KeyObject {
  try {
    return new X509Certificate(der).publicKey;
  } catch (cause) {
    throw cmsProblem('cms_malformed', 'a certificate has an unreadable public key', { cause });
  }
}

/** Subject, issuer, serial and validity, the fields contract section 4 reports. */
export function certificateSummary(c: ParsedCertificate): CertificateSummary {
  const tbs = c.cert.tbsCertificate;
  return {
    subject: nameToString(tbs.subject),
    issuer: nameToString(tbs.issuer),
    serialNumber: hex(c.serial),
    notBefore: tbs.validity.notBefore.getTime().toISOString(),
    notAfter: tbs.validity.notAfter.getTime().toISOString(),
  };
}
