/**
 * The one RFC 4514 formatter of X.501 Names, for the keystore's certificate summaries and the CMS
 * engine's signer and recipient identifiers alike, so one certificate prints the same everywhere.
 */
import { AsnConvert } from '@peculiar/asn1-schema';
import type { AttributeTypeAndValue, Name } from '@peculiar/asn1-x509';

/** RFC 4514 section 3 names, plus the ones OpenSSL's RFC2253 output also uses. Map: types come from untrusted DER. */
const SHORT_NAMES = new Map<string, string>([
  ['2.5.4.3', 'CN'],
  ['2.5.4.7', 'L'],
  ['2.5.4.8', 'ST'],
  ['2.5.4.10', 'O'],
  ['2.5.4.11', 'OU'],
  ['2.5.4.6', 'C'],
  ['2.5.4.9', 'STREET'],
  ['0.9.2342.19200300.100.1.25', 'DC'],
  ['0.9.2342.19200300.100.1.1', 'UID'],
  ['2.5.4.5', 'serialNumber'],
  ['2.5.4.4', 'SN'],
  ['2.5.4.42', 'GN'],
  ['2.5.4.12', 'title'],
  ['1.2.840.113549.1.9.1', 'emailAddress'],
]);

/** RFC 4514 section 2.1: RDNs last to first, joined by ','; multi-valued RDNs by '+'. */
export function formatName(name: Name): string {
  return [...name]
    .reverse()
    .map((rdn) => [...rdn].map(formatAttribute).join('+'))
    .join(',');
}

function formatAttribute(atv: AttributeTypeAndValue): string {
  const short = SHORT_NAMES.get(atv.type);
  const v = atv.value;
  // Section 2.4: a value of an unnamed type, or not a string, is '#' and its BER in hex.
  if (!short || v.anyValue) {
    const ber = v.anyValue ?? AsnConvert.serialize(v);
    return `${short ?? atv.type}=#${Buffer.from(ber).toString('hex')}`;
  }
  return `${short}=${escapeValue(v.toString())}`;
}

/** RFC 4514 section 2.4: escape the specials, a leading space or '#', a trailing space, NUL. */
export function escapeValue(s: string): string {
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
