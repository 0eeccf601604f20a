/**
 * What the service shows and matches on for an X.509 certificate (RFC 5280): an RFC 4514 summary,
 * the issuer Name and serial number bytes for CMS IssuerAndSerialNumber, and the subject key
 * identifier for CMS SubjectKeyIdentifier (RFC 5652 section 10.2.4).
 */
import { createHash } from 'node:crypto';
import { AsnProp } from '@peculiar/asn1-schema';
import {
  Certificate,
  ExtendedKeyUsage,
  KeyUsage,
  Name,
  TBSCertificate,
  id_ce_extKeyUsage,
  id_ce_keyUsage,
} from '@peculiar/asn1-x509';
import { octets, parseAsn, unsignedInteger } from '../asn1/der.ts';
import { formatName } from '../asn1/name.ts';
import { OID } from '../asn1/oids.ts';
import type { CertificateDetails, CertificateUsage } from './types.ts';
import { problem } from '../errors/index.ts';

/** TBSCertificate whose issuer keeps its original bytes (`issuerRaw`): re-encoding could differ. */
class TbsWithRawIssuer extends TBSCertificate {
  declare issuerRaw?: ArrayBuffer;
}
AsnProp({ type: Name, raw: true })(TbsWithRawIssuer.prototype, 'issuer');

type CertificateWithRawTbs = Certificate & { tbsCertificateRaw?: ArrayBuffer };

/** Summarises a DER certificate; keystore-malformed when it is not one. */
export function summarizeCertificate(der: Buffer): CertificateDetails {
  const cert = parseAsn(
    der,
    Certificate,
    'certificate',
    'keystore_malformed',
  ) as CertificateWithRawTbs;
  if (!cert.tbsCertificateRaw)
    throw problem('keystore_malformed', 'certificate has no TBSCertificate');
  const tbs = parseAsn(
    cert.tbsCertificateRaw,
    TbsWithRawIssuer,
    'TBSCertificate',
    'keystore_malformed',
  );
  if (!tbs.issuerRaw) throw problem('keystore_malformed', 'certificate issuer could not be read');

  const serial = unsignedInteger(tbs.serialNumber);
  return {
    subject: formatName(tbs.subject),
    issuer: formatName(tbs.issuer),
    serialNumber: serial.toString('hex').toUpperCase(),
    notBefore: tbs.validity.notBefore.getTime().toISOString(),
    notAfter: tbs.validity.notAfter.getTime().toISOString(),
    issuerDer: Buffer.from(tbs.issuerRaw),
    serialNumberBytes: serial,
    subjectKeyIdentifier: subjectKeyIdentifier(tbs),
    ...usagesOf(tbs),
  };
}

/** keyUsage bits (RFC 5280 section 4.2.1.3) and what each lets the service do with the key. */
const KEY_USAGE_BITS = new Map<string, CertificateUsage>([
  ['digitalSignature', 'sign'],
  ['nonRepudiation', 'sign'],
  ['keyEncipherment', 'encrypt'],
  ['dataEncipherment', 'encrypt'],
  ['keyAgreement', 'encrypt'],
]);
/** Extended key usages that only sign (RFC 5280 section 4.2.1.12); any other purpose leaves both. */
const SIGN_ONLY_PURPOSES = new Set<string>([OID.codeSigning, OID.timeStamping, OID.ocspSigning]);

/**
 * What the certificate lets its key do: from keyUsage, narrowed by extendedKeyUsage when both are
 * present (section 4.2.1.12: the key is used only as both allow). Without either extension the
 * certificate does not restrict the key, and `usages` is absent.
 */
function usagesOf(tbs: TBSCertificate): { usages?: CertificateUsage[] } {
  const ku = tbs.extensions?.find((e) => e.extnID === id_ce_keyUsage);
  const eku = tbs.extensions?.find((e) => e.extnID === id_ce_extKeyUsage);
  if (!ku && !eku) return {};
  let allowed = new Set<CertificateUsage>(['sign', 'encrypt']);
  if (ku) {
    const bits = parseAsn(
      ku.extnValue.buffer,
      KeyUsage,
      'keyUsage extension',
      'keystore_malformed',
    ).toJSON();
    allowed = new Set(bits.flatMap((b) => (KEY_USAGE_BITS.has(b) ? [KEY_USAGE_BITS.get(b)!] : [])));
  }
  if (eku) {
    const purposes = [
      ...parseAsn(
        eku.extnValue.buffer,
        ExtendedKeyUsage,
        'extendedKeyUsage extension',
        'keystore_malformed',
      ),
    ];
    if (purposes.length > 0 && purposes.every((p) => SIGN_ONLY_PURPOSES.has(p)))
      allowed.delete('encrypt');
  }
  return { usages: (['sign', 'encrypt'] as const).filter((u) => allowed.has(u)) };
}

/** The SKI extension's value, else RFC 5280 section 4.2.1.2 method 1: SHA-1 of the key bits. */
function subjectKeyIdentifier(tbs: TBSCertificate): Buffer {
  const ext = tbs.extensions?.find((e) => e.extnID === OID.subjectKeyIdentifier);
  if (ext)
    return octets(ext.extnValue.buffer, 'subjectKeyIdentifier extension', 'keystore_malformed');
  return createHash('sha1').update(Buffer.from(tbs.subjectPublicKeyInfo.subjectPublicKey)).digest();
}
