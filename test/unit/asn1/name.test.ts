import { AsnConvert } from '@peculiar/asn1-schema';
import {
  AttributeTypeAndValue,
  AttributeValue,
  Name,
  RelativeDistinguishedName,
} from '@peculiar/asn1-x509';
import { escapeValue, formatName } from '../../../shared/asn1/name.ts';
import { issuerSerialRef } from '../../../shared/pkcs7/identifiers.ts';
import { IssuerAndSerialNumber } from '@peculiar/asn1-cms';

const atv = (type: string, utf8String: string) =>
  new AttributeTypeAndValue({ type, value: new AttributeValue({ utf8String }) });
/** A Name from its RDNs in encoding order (least specific first), as X.501 stores them. */
const nameOf = (...rdns: AttributeTypeAndValue[][]) =>
  new Name(rdns.map((r) => new RelativeDistinguishedName(r)));

describe('the one RFC 4514 formatter', () => {
  it.each([
    ['a leading space', ' lead', '\\ lead'],
    ['a leading #', '#tag', '\\#tag'],
    ['a # elsewhere', 'a#b', 'a#b'],
    ['a trailing space', 'trail ', 'trail\\ '],
    ['a lone space', ' ', '\\ '],
    ['inner spaces', 'a b', 'a b'],
    ['a comma', 'Acme, Inc.', 'Acme\\, Inc.'],
    ['a plus', 'R+D', 'R\\+D'],
    ['a double quote', 'say "hi"', 'say \\"hi\\"'],
    ['a backslash', 'a\\b', 'a\\\\b'],
    ['angle brackets', '<x>', '\\<x\\>'],
    ['a semicolon', 'a;b', 'a\\;b'],
    // Section 2.4 lists '=' among the characters that need no escape; OpenSSL leaves it too.
    ['an equals sign', 'a=b', 'a=b'],
    ['a NUL', 'a\0b', 'a\\00b'],
  ])(
    'when a value has %s, then it is written as RFC 4514 section 2.4 says',
    (_, value, expected) => {
      expect(escapeValue(value)).toBe(expected);
    },
  );

  it('when the Name has several RDNs, then the most specific comes first, joined by commas', () => {
    expect(
      formatName(
        nameOf([atv('2.5.4.6', 'FR')], [atv('2.5.4.10', 'Acme')], [atv('2.5.4.3', 'signer')]),
      ),
    ).toBe('CN=signer,O=Acme,C=FR');
  });

  it('when an RDN is multi-valued, then its values are joined by + (section 2.2)', () => {
    expect(
      formatName(
        nameOf(
          [atv('2.5.4.10', 'Acme')],
          [atv('2.5.4.3', 'ops'), atv('0.9.2342.19200300.100.1.1', 'u1')],
        ),
      ),
    ).toBe('CN=ops+UID=u1,O=Acme');
  });

  it('when the type has no short name, then the value is # and the hex of its BER (section 2.4)', () => {
    expect(formatName(nameOf([atv('2.5.4.17', '12345')]))).toBe('2.5.4.17=#0c053132333435');
  });

  // Regression: the CMS engine had its own formatter, which escaped nothing and printed unknown
  // types as dotted OIDs with raw text, so one certificate printed two ways.
  it('when a CMS identifier names an issuer that needs escaping, then the analysis prints it as the keystore does', () => {
    const issuer = nameOf(
      [atv('2.5.4.10', 'Acme, Inc.')],
      [atv('2.5.4.3', ' CA ')],
      [atv('2.5.4.17', '75001')],
    );
    const ias = new IssuerAndSerialNumber({
      issuer,
      serialNumber: new Uint8Array([0x00, 0x9f]).buffer,
    });
    const { summary } = issuerSerialRef(
      AsnConvert.parse(AsnConvert.serialize(ias), IssuerAndSerialNumber),
    );
    expect(summary).toEqual({
      type: 'issuerAndSerialNumber',
      issuer: '2.5.4.17=#0c053735303031,CN=\\ CA\\ ,O=Acme\\, Inc.',
      serialNumber: '9F',
    });
  });
});
