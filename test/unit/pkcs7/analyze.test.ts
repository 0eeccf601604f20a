import { randomBytes } from 'node:crypto';
import { analyzePkcs7 } from '../../../shared/pkcs7/index.ts';
import {
  OpenSslDir,
  buildSignedAndEnveloped,
  chunked,
  makeKey,
  resolverFor,
} from '../../../support/fixtures/pkcs7.ts';
import type { TestKey } from '../../../support/fixtures/pkcs7.ts';
import { cms } from '../../../support/fixtures/cms.ts';

let ssl: OpenSslDir;
let keys: Record<string, TestKey>;
const data = randomBytes(12_345);

beforeAll(() => {
  ssl = new OpenSslDir();
  keys = {
    rsa: makeKey(ssl, 'rsa-key', 'rsa-2048'),
    ec: makeKey(ssl, 'ec-key', 'ec-p256'),
    other: makeKey(ssl, 'other', 'rsa-2048'),
  };
  ssl.write('data.bin', data);
});

afterAll(() => ssl.cleanup());

const sign = (key: TestKey, args: string[]) =>
  cms.sign(ssl, 'data.bin', { by: key, binary: true, outform: 'DER', extra: args });
const encrypt = (key: TestKey, args: string[]) =>
  cms.encrypt(ssl, 'data.bin', {
    to: { recip: key },
    binary: true,
    outform: 'DER',
    extra: args,
  });

describe('analyzePkcs7', () => {
  it('when a DER SignedData is analysed, then it reports the signer, its algorithms, certificate and kid', async () => {
    const a = await analyzePkcs7(
      chunked(sign(keys.rsa, ['-nodetach']), 1000),
      resolverFor(Object.values(keys)),
    );
    expect(a).toMatchObject({
      contentType: 'signedData',
      encoding: 'der',
      contentLength: data.length,
      detached: false,
      innerContentType: { oid: '1.2.840.113549.1.7.1', name: 'data' },
      recipients: [],
      contentEncryption: null,
      convertible: true,
    });
    expect(a.reason).toBeUndefined();
    expect(a.signers).toHaveLength(1);
    expect(a.signers[0]).toMatchObject({
      identifier: { type: 'issuerAndSerialNumber', issuer: 'O=Keyward Tests,CN=rsa-key' },
      digestAlgorithm: { oid: '2.16.840.1.101.3.4.2.1', name: 'sha256' },
      signatureAlgorithm: { oid: '1.2.840.113549.1.1.1', name: 'rsaEncryption' },
      signedAttributes: true,
      certificate: { subject: 'O=Keyward Tests,CN=rsa-key', issuer: 'O=Keyward Tests,CN=rsa-key' },
      kid: 'rsa-key',
    });
    expect(a.signers[0].certificate!.serialNumber).toBe(a.signers[0].identifier.serialNumber);
    expect(new Date(a.signers[0].certificate!.notAfter).getTime()).toBeGreaterThan(Date.now());
  });

  it('when a streamed BER SignedData is analysed one byte at a time, then encoding is ber and the length counts the content', async () => {
    const a = await analyzePkcs7(chunked(sign(keys.ec, ['-nodetach', '-stream']), 1));
    expect(a).toMatchObject({
      contentType: 'signedData',
      encoding: 'ber',
      contentLength: data.length,
      convertible: true,
    });
    expect(a.signers[0]).toMatchObject({
      signatureAlgorithm: { name: 'ecdsa-with-SHA256' },
      kid: null,
    });
  });

  it('when a SignedData is detached, then detached is true and the length 0', async () => {
    expect(await analyzePkcs7(chunked(sign(keys.rsa, []), 500))).toMatchObject({
      detached: true,
      contentLength: 0,
      convertible: true,
    });
  });

  it('when a SignedData has two signers, then both are reported and it is convertible', async () => {
    const file = sign(keys.rsa, [
      '-nodetach',
      '-signer',
      keys.ec.certFile,
      '-inkey',
      keys.ec.keyFile,
    ]);
    const a = await analyzePkcs7(chunked(file, 100));
    expect(a.signers).toHaveLength(2);
    expect(a.convertible).toBe(true);
  });

  it('when the signer key is not imported, then convertible is false with that reason', async () => {
    const a = await analyzePkcs7(
      chunked(sign(keys.rsa, ['-nodetach']), 100),
      resolverFor([keys.other]),
    );
    expect(a).toMatchObject({
      convertible: false,
      reason: expect.stringMatching(/no key to re-sign with/),
      signing: { path: 'signer-key', kids: [] },
    });
    expect(a.signers[0].verifiedWith).toBe('embedded-certificate');
  });

  it('when an EnvelopedData is analysed, then it reports the recipient, the key transport and the content encryption', async () => {
    const a = await analyzePkcs7(
      chunked(encrypt(keys.rsa, ['-aes-192-cbc', '-keyopt', 'rsa_padding_mode:oaep']), 333),
      resolverFor([keys.rsa]),
    );
    expect(a).toMatchObject({
      contentType: 'envelopedData',
      encoding: 'der',
      contentLength: Math.ceil((data.length + 1) / 16) * 16,
      contentEncryption: { oid: '2.16.840.1.101.3.4.1.22', name: 'aes192-CBC' },
      signers: [],
      convertible: true,
    });
    expect(a.recipients).toEqual([
      {
        type: 'keyTransport',
        identifier: expect.objectContaining({
          type: 'issuerAndSerialNumber',
          issuer: 'O=Keyward Tests,CN=rsa-key',
        }),
        keyEncryptionAlgorithm: { oid: '1.2.840.113549.1.1.7', name: 'RSAES-OAEP' },
        certificate: expect.objectContaining({ subject: 'O=Keyward Tests,CN=rsa-key' }),
        kid: 'rsa-key',
      },
    ]);
  });

  it('when an ECDH EnvelopedData is analysed, then the key agreement and key wrap are named', async () => {
    const a = await analyzePkcs7(chunked(encrypt(keys.ec, ['-aes-128-cbc', '-stream']), 50));
    expect(a.encoding).toBe('ber');
    expect(a.recipients[0]).toMatchObject({
      type: 'keyAgreement',
      keyEncryptionAlgorithm: { name: 'dhSinglePass-stdDH-sha1kdf-scheme' },
      keyWrapAlgorithm: { name: 'aes128-wrap' },
      kid: null,
    });
  });

  it('when an AuthEnvelopedData is analysed, then the GCM content encryption is named', async () => {
    const a = await analyzePkcs7(chunked(encrypt(keys.rsa, ['-aes-256-gcm']), 4096));
    expect(a).toMatchObject({
      contentType: 'authEnvelopedData',
      contentLength: data.length,
      contentEncryption: { name: 'aes256-GCM' },
      convertible: true,
    });
  });

  it('when a SignedAndEnvelopedData is analysed, then both the signer and the recipient are reported', async () => {
    const file = buildSignedAndEnveloped(
      encrypt(keys.rsa, ['-aes-256-cbc']),
      sign(keys.ec, ['-nodetach']),
      keys.rsa,
      false,
    );
    const a = await analyzePkcs7(chunked(file, 4096), resolverFor(Object.values(keys)));
    expect(a).toMatchObject({ contentType: 'signedAndEnvelopedData', convertible: true });
    expect(a.signers[0].kid).toBe('ec-key');
    expect(a.recipients[0].kid).toBe('rsa-key');
  });
});
