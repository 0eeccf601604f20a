/** X.509 certificates carried in a CMS message: matching a signer identifier, and summaries. */
import { X509Certificate } from 'node:crypto';
import { AsnConvert } from '@peculiar/asn1-schema';
import { Certificate, SubjectKeyIdentifier } from '@peculiar/asn1-x509';
import { hex, parseAsn, unsignedInteger } from '../asn1/der.ts';
import { formatName } from '../asn1/name.ts';
import { OID } from '../asn1/oids.ts';
import { certificateKeyFault } from './signature-budget.ts';
import type { SignatureBudget } from './signature-budget.ts';
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

/** Subject, issuer, serial and validity, the fields the keystore import reports. */
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

/** Most certificates a chain may have, leaf and anchor included. */
const MAX_CHAIN = 8;

const x509 = (der: Buffer): X509Certificate | null => {
  try {
    return new X509Certificate(der);
  } catch {
    return null;
  }
};

/** Whose key may sign a link: the import's key rules (a refused key is never checked). */
const usableKey = (c: X509Certificate): boolean => {
  try {
    return certificateKeyFault(c.publicKey) === null;
  } catch {
    return false;
  }
};

/**
 * True when `parent` issued `child`: its name (RFC 5280 section 6.1.3), then, taken from
 * `budget`, its signature.
 */
const issued = (child: X509Certificate, parent: X509Certificate, budget: SignatureBudget) => {
  let named: boolean;
  try {
    named = child.checkIssued(parent);
  } catch {
    return false;
  }
  return (
    named &&
    budget.link(`${child.fingerprint256}/${parent.fingerprint256}`, () => {
      try {
        return child.verify(parent.publicKey);
      } catch {
        return false;
      }
    })
  );
};

/**
 * The certificates from `leaf` towards a root through `pool`, each issued (name and signature)
 * by the next, intermediates being CAs: the path up to and including the first of `anchors` met,
 * with `anchored` true; without one, the path as far as the pool leads. Certificates whose key the
 * import would refuse are never candidates, and every signature checked is taken from `budget`.
 * Validity periods are not checked: an archived signature outlives its certificates (documented
 * in docs/migration.md).
 */
export function certificatePath(
  leaf: Buffer,
  pool: Buffer[],
  anchors: Buffer[],
  budget: SignatureBudget,
): { path: Buffer[]; anchored: boolean } {
  const first = x509(leaf);
  if (!first) return { path: [leaf], anchored: false };
  const anchorCerts = anchors
    .map(x509)
    .filter((c): c is X509Certificate => c !== null && usableKey(c));
  const poolCerts = pool
    .map(x509)
    .filter((c): c is X509Certificate => c !== null && c.ca && usableKey(c));
  const path = [first];
  let cur = first;
  while (path.length <= MAX_CHAIN) {
    if (anchorCerts.some((a) => a.raw.equals(cur.raw)))
      return { path: path.map((c) => c.raw), anchored: true };
    const anchor = anchorCerts.find((a) => issued(cur, a, budget));
    if (anchor) return { path: [...path, anchor].map((c) => c.raw), anchored: true };
    const next = poolCerts.find(
      (c) => !path.some((p) => p.raw.equals(c.raw)) && issued(cur, c, budget),
    );
    if (!next) break;
    path.push(next);
    cur = next;
  }
  return { path: path.map((c) => c.raw), anchored: false };
}

/**
 * A certificates-only SignedData (a `.p7b`: no signers, no content) as a JWK Set (RFC 7517
 * section 5): one public JWK per X.509 certificate, with the certificate as its `x5c`, in file
 * order. Other CertificateChoices are skipped.
 */
export function certificatesJwkSet(certificates: Buffer[]): { keys: Record<string, unknown>[] } {
  const keys: Record<string, unknown>[] = [];
  for (const der of certificates) {
    const cert = x509(der);
    if (!cert) continue;
    let jwk: Record<string, unknown>;
    try {
      jwk = cert.publicKey.export({ format: 'jwk' }) as Record<string, unknown>;
    } catch {
      // A key type JWK cannot express (DSA, say): the certificate alone still says who it is.
      jwk = {};
    }
    keys.push({ ...jwk, x5c: [cert.raw.toString('base64')] });
  }
  return { keys };
}
