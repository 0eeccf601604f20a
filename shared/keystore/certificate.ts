/**
 * What the service shows and matches on for an X.509 certificate (RFC 5280): an RFC 4514 summary,
 * the issuer Name and serial number bytes for CMS IssuerAndSerialNumber, and the subject key
 * identifier for CMS SubjectKeyIdentifier (RFC 5652 section 10.2.4).
 */
import { createHash } from 'node:crypto';
import { AsnConvert, AsnProp } from '@peculiar/asn1-schema';
import { Certificate, ExtendedKeyUsage, KeyUsage, Name, TBSCertificate, id_ce_extKeyUsage, id_ce_keyUsage } from '@peculiar/asn1-x509';
import type { AttributeTypeAndValue } from '@peculiar/asn1-x509';
import { OID, octets, parseAs } from './asn1.ts';
import { keystoreProblem } from './problems.ts';
import type { CertificateDetails, CertificateUsage } from './types.ts';

/** TBSCertificate whose issuer keeps its original bytes (`issuerRaw`): re-encoding could differ. */
class TbsWithRawIssuer extends TBSCertificate {
  declare issuerRaw?: ArrayBuffer;
}
AsnProp({ type: Name, raw: true })(TbsWithRawIssuer.prototype, 'issuer');

type CertificateWithRawTbs = Certificate & { tbsCertificateRaw?: ArrayBuffer };

/** Summarises a DER certificate; keystore-malformed when it is not one. */
export function summarizeCertificate(der: Buffer): CertificateDetails {
  const cert = parseAs(der, Certificate, 'certificate') as CertificateWithRawTbs;
  if (!cert.tbsCertificateRaw) throw keystoreProblem('keystore_malformed', 'certificate has no TBSCertificate');
  const tbs = parseAs(cert.tbsCertificateRaw, TbsWithRawIssuer, 'TBSCertificate');
  if (!tbs.issuerRaw) throw keystoreProblem('keystore_malformed', 'certificate issuer could not be read');

  const serial = unsignedSerial(Buffer.from(tbs.serialNumber));
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
  ['digitalSignature', 'sign'], ['nonRepudiation', 'sign'],
  ['keyEncipherment', 'encrypt'], ['dataEncipherment', 'encrypt'], ['keyAgreement', 'encrypt'],
]);
/** Extended key usages that only sign (RFC 5280 section 4.2.1.12); any other purpose leaves both. */
const SIGN_ONLY_PURPOSES = new Set(['1.3.6.1.5.5.7.3.3', '1.3.6.1.5.5.7.3.8', '1.3.6.1.5.5.7.3.9']);

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
    const bits = parseAs(ku.extnValue.buffer, KeyUsage, 'keyUsage extension').toJSON();
    allowed = new Set(bits.flatMap((b) => (KEY_USAGE_BITS.has(b) ? [KEY_USAGE_BITS.get(b)!] : [])));
  }
  if (eku) {
    const purposes = [...parseAs(eku.extnValue.buffer, ExtendedKeyUsage, 'extendedKeyUsage extension')];
    if (purposes.length > 0 && purposes.every((p) => SIGN_ONLY_PURPOSES.has(p))) allowed.delete('encrypt');
  }
  return { usages: (['sign', 'encrypt'] as const).filter((u) => allowed.has(u)) };
}

/** The SKI extension's value, else RFC 5280 section 4.2.1.2 method 1: SHA-1 of the key bits. */
function subjectKeyIdentifier(tbs: TBSCertificate): Buffer {
  const ext = tbs.extensions?.find((e) => e.extnID === OID.subjectKeyIdentifier);
  if (ext) return octets(ext.extnValue.buffer, 'subjectKeyIdentifier extension');
  return createHash('sha1').update(Buffer.from(tbs.subjectPublicKeyInfo.subjectPublicKey)).digest();
}

/** INTEGER content octets without the sign byte DER adds to a positive serial (X.690 8.3.2). */
function unsignedSerial(bytes: Buffer): Buffer {
  let i = 0;
  while (i < bytes.length - 1 && bytes[i] === 0) i++;
  return bytes.subarray(i);
}

/** RFC 4514 section 3 names, plus the ones OpenSSL's RFC2253 output also uses. */
const SHORT_NAMES: Record<string, string> = {
  '2.5.4.3': 'CN',
  '2.5.4.7': 'L',
  '2.5.4.8': 'ST',
  '2.5.4.10': 'O',
  '2.5.4.11': 'OU',
  '2.5.4.6': 'C',
  '2.5.4.9': 'STREET',
  '0.9.2342.19200300.100.1.25': 'DC',
  '0.9.2342.19200300.100.1.1': 'UID',
  '2.5.4.5': 'serialNumber',
  '2.5.4.4': 'SN',
  '2.5.4.42': 'GN',
  '2.5.4.12': 'title',
  '1.2.840.113549.1.9.1': 'emailAddress',
};

/** RFC 4514 section 2.1: RDNs last to first, joined by ','; multi-valued RDNs by '+'. */
export function formatName(name: Name): string {
  return [...name].reverse().map((rdn) => [...rdn].map(formatAttribute).join('+')).join(',');
}

function formatAttribute(atv: AttributeTypeAndValue): string {
  const short = SHORT_NAMES[atv.type];
  const v = atv.value;
  // Section 2.4: a value of an unnamed type, or not a string, is '#' and its BER in hex.
  if (!short || v.anyValue) {
    const ber = v.anyValue ?? AsnConvert.serialize(v);
    return `${short ?? atv.type}=#${Buffer.from(ber).toString('hex')}`;
  }
  return `${short}=${escapeValue(v.toString())}`;
}

/** RFC 4514 section 2.4: escape the specials, a leading space or '#', a trailing space, NUL. */
function escapeValue(s: string): string {
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    const edgeSpace = c === ' ' && (i === 0 || i === s.length - 1);
    if (',+"\\<>;'.includes(c) || edgeSpace || (c === '#' && i === 0)) out += `\\${c}`;
    else if (c === '\0') out += '\\00';
    else out += c;
  }
  return out;
}
