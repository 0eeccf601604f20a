/**
 * Signed-then-encrypted mail (RFC 8551 section 3.7), as `openssl cms -sign | openssl cms
 * -encrypt` makes it: the EnvelopedData's plaintext is a clear-signed multipart/signed entity.
 * The JWE holds that entity byte for byte; its signature is verified and a third part carries
 * the JWS over the signed MIME entity, both checked with jose.
 */
import { createPublicKey, type KeyObject } from 'node:crypto';
import { flattenedDecrypt, flattenedVerify } from 'jose';
import { convertPkcs7ToJose } from '../../../shared/pkcs7/index.ts';
import {
  OpenSslDir,
  chunked,
  collect,
  makeKey,
  parseMultipart,
  resolverFor,
} from '../../../support/fixtures/pkcs7.ts';
import type { Part, TestKey } from '../../../support/fixtures/pkcs7.ts';
import { cms } from '../../../support/fixtures/cms.ts';

let ssl: OpenSslDir;
let rsa: TestKey;
let signer: TestKey;
let ec: TestKey;
const TEXT = Buffer.from(
  Array.from({ length: 4000 }, (_, i) => `confidential line ${i}`).join('\n') + '\n',
);
const crlf = (b: Buffer) => Buffer.from(b.toString('latin1').replace(/\r?\n/g, '\r\n'), 'latin1');

beforeAll(() => {
  ssl = new OpenSslDir();
  rsa = makeKey(ssl, 'ste-rsa', 'rsa-2048');
  signer = makeKey(ssl, 'ste-signer', 'rsa-2048');
  ec = makeKey(ssl, 'ste-ec', 'ec-p256');
  ssl.write('mail.txt', TEXT);
});

afterAll(() => ssl.cleanup());

function signThenEncrypt(key: TestKey, signArgs: string[]): { mail: Buffer; signed: Buffer } {
  const signed = cms.sign(ssl, 'mail.txt', { by: key, extra: signArgs });
  ssl.write('signed.eml', signed);
  return {
    signed,
    mail: cms.encrypt(ssl, 'signed.eml', { to: rsa, cipher: 'aes256' }),
  };
}

async function convert(file: Buffer): Promise<{ parts: Part[]; closed: boolean }> {
  const r = await convertPkcs7ToJose(chunked(file, 3000), {
    metadata: {},
    resolver: resolverFor([rsa, signer, ec]),
  });
  return parseMultipart(await collect(r.body), r.contentType);
}

async function decrypt(parts: Part[], key: KeyObject): Promise<Buffer> {
  const jwe = JSON.parse(parts[0].body.toString());
  const ct = parts[1].body;
  const { plaintext } = await flattenedDecrypt(
    {
      protected: jwe.protected,
      header: jwe.recipients[0].header,
      encrypted_key: jwe.recipients[0].encrypted_key,
      iv: jwe.iv,
      ciphertext: ct.subarray(0, ct.length - 16).toString('base64url'),
      tag: ct.subarray(ct.length - 16).toString('base64url'),
    },
    key,
  );
  return Buffer.from(plaintext);
}

describe('when an S/MIME EnvelopedData holds a clear-signed entity (sign, then encrypt)', () => {
  it.each([
    { name: 'RSA signer', key: () => signer, args: [] as string[], entity: () => crlf(TEXT) },
    {
      name: 'EC signer with -text',
      key: () => ec,
      args: ['-text'],
      entity: () => Buffer.concat([Buffer.from('Content-Type: text/plain\r\n\r\n'), crlf(TEXT)]),
    },
  ])(
    'then ($name) the JWE holds the signed message and a JWS part verifies over its signed entity',
    async ({ key, args, entity }) => {
      const { mail, signed } = signThenEncrypt(key(), args);
      const { parts, closed } = await convert(mail);
      expect(closed).toBe(true);
      expect(parts.map((p) => p.contentType)).toEqual([
        'application/jose+json',
        'application/octet-stream',
        'application/jose+json',
      ]);
      // openssl -encrypt (no -binary) canonicalised the whole signed message to CRLF.
      expect((await decrypt(parts, rsa.privateKey)).equals(crlf(signed))).toBe(true);
      const jws = JSON.parse(parts[2].body.toString());
      const { protectedHeader } = await flattenedVerify(
        { ...jws, payload: entity() },
        createPublicKey(key().privateKey),
      );
      expect(protectedHeader?.b64).toBe(false);
    },
  );

  it('then a signed entity altered before encryption cuts the answer before the JWE tag', async () => {
    const signed = cms.sign(ssl, 'mail.txt', { by: signer });
    const at = signed.indexOf('confidential line 17');
    signed[at] = 'C'.charCodeAt(0);
    ssl.write('bad.eml', signed);
    const mail = cms.encrypt(ssl, 'bad.eml', { to: rsa, cipher: 'aes256' });
    const r = await convertPkcs7ToJose(chunked(mail, 3000), {
      metadata: {},
      resolver: resolverFor([rsa, signer]),
    });
    // Inside encrypted content a bad signature is the one opaque decryption-failed:
    // told apart from a bad padding, it would be a padding oracle.
    await expect(collect(r.body)).rejects.toMatchObject({ code: 'decryption_failed' });
  });

  it('then plain text that merely mentions multipart/signed is only encrypted', async () => {
    ssl.write('note.txt', Buffer.from('Subject: about Content-Type: multipart/signed\n\nhello\n'));
    const mail = cms.encrypt(ssl, 'note.txt', { to: rsa, binary: true });
    const { parts, closed } = await convert(mail);
    expect(closed).toBe(true);
    expect(parts).toHaveLength(2);
  });
});
