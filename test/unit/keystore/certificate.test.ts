import { parseKeystore, summarizeCertificate } from '../../../shared/keystore/index.ts';
import {
  LEAF_SERIAL,
  certDer,
  exportPkcs12,
  fixtureDir,
  makeKeysAndCertificates,
  opensslName,
  opensslSerial,
  opensslSki,
  problemOf,
  tbsNameDer,
} from './fixtures.ts';

const fx = fixtureDir();
beforeAll(() => makeKeysAndCertificates(fx));
afterAll(() => fx.cleanup());

describe('the identifiers of an imported leaf (for CMS IssuerAndSerialNumber and SubjectKeyIdentifier)', () => {
  it('when a CA-issued v1 leaf is imported from PKCS#12, then issuerDer, serialNumber and SKI match OpenSSL', () => {
    const data = exportPkcs12(
      fx,
      'chain.p12',
      'p384.key',
      'leaf.crt',
      '-certfile',
      'chain.pem',
      '-passout',
      'pass:pw',
      '-legacy',
    );
    const [entry] = parseKeystore({ data, password: 'pw' });

    expect(entry.issuerDer).toEqual(tbsNameDer(fx, 'leaf.crt', 'issuer'));
    expect(entry.issuerDer).toEqual(tbsNameDer(fx, 'inter.crt', 'subject'));
    expect(opensslSerial(fx, 'leaf.crt')).toBe(LEAF_SERIAL);
    expect(entry.serialNumber?.toString('hex').toUpperCase()).toBe(LEAF_SERIAL);
    expect(entry.certificate?.serialNumber).toBe(LEAF_SERIAL);
    // The leaf has no SKI extension; method 1 must give what OpenSSL puts in a certificate of the same key.
    expect(opensslSki(fx, 'leaf.crt')).toBeUndefined();
    expect(entry.subjectKeyIdentifier).toEqual(opensslSki(fx, 'p384.crt'));
  });

  it.each(['rsa.crt', 'p256.crt', 'ed25519.crt', 'root.crt', 'inter.crt'])(
    'when %s is summarised, then subject, issuer, serial and SKI agree with OpenSSL',
    (cert) => {
      const summary = summarizeCertificate(certDer(fx, cert));
      expect(summary.subject).toBe(opensslName(fx, cert, 'subject'));
      expect(summary.issuer).toBe(opensslName(fx, cert, 'issuer'));
      expect(summary.serialNumber).toBe(opensslSerial(fx, cert));
      expect(summary.issuerDer).toEqual(tbsNameDer(fx, cert, 'issuer'));
      expect(summary.subjectKeyIdentifier).toEqual(opensslSki(fx, cert));
    },
  );

  it('when the validity is read, then notBefore and notAfter are the ISO instants OpenSSL prints', () => {
    const summary = summarizeCertificate(certDer(fx, 'rsa.crt'));
    const text = fx
      .openssl('x509', '-in', 'rsa.crt', '-noout', '-startdate', '-enddate')
      .toString();
    const [, start] = /notBefore=(.+)/.exec(text)!;
    const [, end] = /notAfter=(.+)/.exec(text)!;
    expect(summary.notBefore).toBe(new Date(start).toISOString());
    expect(summary.notAfter).toBe(new Date(end).toISOString());
  });

  it('when a name needs RFC 4514 escaping, then the summary escapes it as OpenSSL does', () => {
    fx.openssl(
      'req',
      '-x509',
      '-key',
      'rsa.key',
      '-days',
      '1',
      '-out',
      'escape.crt',
      '-subj',
      '/C=US/O=Acme\\, Inc. <R\\+D>/OU=#hash; semi/CN= padded "quoted" /emailAddress=ops@example.com',
    );
    const summary = summarizeCertificate(certDer(fx, 'escape.crt'));
    expect(summary.subject).toBe(opensslName(fx, 'escape.crt', 'subject'));
    expect(summary.subject).toBe(
      'emailAddress=ops@example.com,CN=\\ padded \\"quoted\\"\\ ,OU=\\#hash\\; semi,O=Acme\\, Inc. \\<R\\+D\\>,C=US',
    );
  });

  it('when an attribute type has no short name, then its value is written as #hex of its BER', () => {
    fx.openssl(
      'req',
      '-x509',
      '-key',
      'rsa.key',
      '-days',
      '1',
      '-out',
      'oid.crt',
      '-subj',
      '/CN=x/postalCode=12345',
    );
    expect(summarizeCertificate(certDer(fx, 'oid.crt')).subject).toBe(
      '2.5.4.17=#0c053132333435,CN=x',
    );
  });

  it('when the bytes are not a certificate, then keystore-malformed', () => {
    expect(problemOf(() => summarizeCertificate(Buffer.from('3003020101', 'hex')))).toMatchObject({
      code: 'keystore_malformed',
    });
  });
});
