/**
 * Archive forms of a CMS object, made by `openssl cms` here: S/MIME as
 * OpenSSL writes it by default, PEM, bare base64, quoted-printable and binary bodies, the .p7m
 * inside a mail with a preamble and folded headers, CRLF and LF files, and clear-signed
 * multipart/signed. Each converts to what its CMS object holds (checked with jose), the analyzer
 * names the form, and each kind of broken input answers its own problem at once.
 */
import { createPublicKey, type KeyObject } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { flattenedDecrypt, flattenedVerify } from 'jose';
import { analyzePkcs7, convertPkcs7ToJose } from '../../../shared/pkcs7/index.ts';
import {
  OpenSslDir,
  chunked,
  collect,
  makeKey,
  parseMultipart,
  resolverFor,
} from '../../../support/fixtures/pkcs7.ts';
import type { TestKey } from '../../../support/fixtures/pkcs7.ts';
import { cms } from '../../../support/fixtures/cms.ts';

let ssl: OpenSslDir;
let rsa: TestKey;
let ec: TestKey;
/** Text with LF line ends: clear signing canonicalises it to CRLF (RFC 8551 section 3.1.1). */
const TEXT = Buffer.from(
  Array.from({ length: 2000 }, (_, i) => `line ${i} of the archived mail, with = and tabs\t.`).join(
    '\n',
  ) + '\n',
);
let der: Buffer;
let smime: Buffer;
let pem: Buffer;

beforeAll(() => {
  ssl = new OpenSslDir();
  rsa = makeKey(ssl, 'rsa', 'rsa-2048');
  ec = makeKey(ssl, 'ec', 'ec-p256');
  ssl.write('text.txt', TEXT);
  smime = cms.encrypt(ssl, 'text.txt', { to: rsa });
  ssl.write('enc.eml', smime);
  der = cms.encrypt(ssl, 'text.txt', { to: rsa, binary: true, outform: 'DER' });
  pem = cms.encrypt(ssl, 'text.txt', { to: rsa, binary: true, outform: 'PEM' });
});

afterAll(() => ssl.cleanup());

const crlf = (b: Buffer) => Buffer.from(b.toString('latin1').replace(/\r?\n/g, '\r\n'), 'latin1');
const lf = (b: Buffer) => Buffer.from(b.toString('latin1').replace(/\r\n/g, '\n'), 'latin1');

async function openJwe(file: Buffer, key: KeyObject, chunk = 1000): Promise<Buffer> {
  const result = await convertPkcs7ToJose(chunked(file, chunk), {
    metadata: {},
    resolver: resolverFor([rsa, ec]),
  });
  const { parts, closed } = parseMultipart(await collect(result.body), result.contentType);
  expect(closed).toBe(true);
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

async function verifyJws(file: Buffer, content: Buffer, pub: KeyObject, chunk = 777) {
  const result = await convertPkcs7ToJose(chunked(file, chunk), {
    metadata: {},
    resolver: resolverFor([rsa, ec]),
  });
  const jws = JSON.parse((await collect(result.body)).toString());
  return flattenedVerify({ ...jws, payload: content }, createPublicKey(pub));
}

/** RFC 2045 section 6.7 encoding of any bytes, lines of at most 76 characters. */
function quotedPrintable(b: Buffer): Buffer {
  let out = '';
  let line = 0;
  for (const byte of b) {
    const t =
      byte >= 33 && byte <= 126 && byte !== 61
        ? String.fromCharCode(byte)
        : `=${byte.toString(16).toUpperCase().padStart(2, '0')}`;
    if (line + t.length > 75) {
      out += '=\r\n';
      line = 0;
    }
    out += t;
    line += t.length;
  }
  return Buffer.from(out, 'latin1');
}

function base64Lines(b: Buffer, width: number, eol = '\r\n'): string {
  const s = b.toString('base64');
  return (s.match(new RegExp(`.{1,${width}}`, 'g')) ?? []).join(eol) + eol;
}

describe('when a CMS EnvelopedData comes as it sits in an archive', () => {
  const forms: { name: string; make: () => Buffer; container: string }[] = [
    {
      name: 'S/MIME as openssl cms -encrypt writes it (LF headers, base64)',
      make: () => smime,
      container: 'smime',
    },
    { name: 'S/MIME with CRLF line ends', make: () => crlf(smime), container: 'smime' },
    { name: 'PEM (-outform PEM, BEGIN CMS)', make: () => pem, container: 'pem' },
    {
      name: 'PEM with the PKCS7 label, CRLF, leading blank lines and text after the END line',
      make: () =>
        Buffer.from(
          `\r\n\r\n-----BEGIN PKCS7-----\r\n${base64Lines(der, 64)}-----END PKCS7-----\r\ntrailing words\r\n`,
        ),
      container: 'pem',
    },
    {
      name: 'bare base64 in 76-character lines',
      make: () => Buffer.from(base64Lines(der, 76)),
      container: 'base64',
    },
    {
      name: 'bare base64 in one line with no line end',
      make: () => Buffer.from(der.toString('base64')),
      container: 'base64',
    },
    {
      name: 'an x-pkcs7-mime entity in quoted-printable, folded Content-Type',
      make: () =>
        Buffer.concat([
          Buffer.from(
            'MIME-Version: 1.0\r\nContent-Type: application/x-pkcs7-mime;\r\n\tsmime-type=enveloped-data;\r\n name="smime.p7m"\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n',
          ),
          quotedPrintable(der),
        ]),
      container: 'smime',
    },
    {
      name: 'a pkcs7-mime entity with binary transfer encoding and no smime-type',
      make: () =>
        Buffer.concat([
          Buffer.from(
            'Content-Type: application/pkcs7-mime\nContent-Transfer-Encoding: binary\n\n',
          ),
          der,
        ]),
      container: 'smime',
    },
    {
      name: 'a .eml whose .p7m is an attachment after a text part, with a preamble, LF line ends',
      make: () =>
        lf(
          Buffer.from(
            [
              'From: a@example.com',
              'Subject: the archive',
              'MIME-Version: 1.0',
              'Content-Type: multipart/mixed;',
              ' boundary="outer=_1"',
              '',
              'This is a multi-part message in MIME format.',
              '',
              '--outer=_1',
              'Content-Type: text/plain',
              '',
              'see the attachment',
              '--outer=_1',
              'Content-Type: application/pkcs7-mime; smime-type=enveloped-data; name=smime.p7m',
              'Content-Transfer-Encoding: base64',
              'Content-Disposition: attachment; filename=smime.p7m',
              '',
              base64Lines(der, 76, '\n') + '--outer=_1--',
              '',
            ].join('\n'),
          ),
        ),
      container: 'smime',
    },
  ];

  it.each(forms)('then $name converts to the JWE of its content', async ({ name, make }) => {
    // Without -binary, openssl canonicalises text to CRLF before encrypting it: that is the content.
    const expected = name.startsWith('S/MIME') ? crlf(TEXT) : TEXT;
    expect(await openJwe(make(), rsa.privateKey)).toEqual(expected);
  });

  it.each(forms)('then the analyzer reports $name as $container', async ({ make, container }) => {
    const a = await analyzePkcs7(chunked(make(), 333), resolverFor([rsa]));
    expect(a).toMatchObject({ contentType: 'envelopedData', container, convertible: true });
  });

  it('then DER and BER inputs report their encoding as the container', async () => {
    expect((await analyzePkcs7(chunked(der, 4096))).container).toBe('der');
    const ber = cms.encrypt(ssl, 'text.txt', {
      to: rsa,
      binary: true,
      stream: true,
      outform: 'DER',
    });
    expect((await analyzePkcs7(chunked(ber, 4096))).container).toBe('ber');
  });
});

describe('when a clear-signed message (multipart/signed) is converted', () => {
  function clearSign(key: TestKey, extra: string[] = []): Buffer {
    return cms.sign(ssl, 'text.txt', { by: key, extra: extra });
  }
  const canonical = crlf(TEXT);

  it('then the JWS verifies over the signed entity as openssl -sign wrote it (RSA)', async () => {
    const { protectedHeader } = await verifyJws(clearSign(rsa), canonical, rsa.privateKey);
    expect(protectedHeader).toMatchObject({ alg: 'RS256', b64: false });
  });

  it('then with -text the signed entity holds its Content-Type header, byte for byte (EC)', async () => {
    const entity = Buffer.concat([Buffer.from('Content-Type: text/plain\r\n\r\n'), canonical]);
    const { protectedHeader } = await verifyJws(clearSign(ec, ['-text']), entity, ec.privateKey);
    expect(protectedHeader?.alg).toBe('ES256');
  });

  it('then a message with every line end turned CRLF still verifies', async () => {
    await expect(
      verifyJws(crlf(clearSign(rsa)), canonical, rsa.privateKey, 1),
    ).resolves.toBeTruthy();
  });

  it('then the analyzer reports multipart-signed and the signed entity length', async () => {
    const a = await analyzePkcs7(chunked(clearSign(rsa), 500), resolverFor([rsa]));
    expect(a).toMatchObject({
      contentType: 'signedData',
      container: 'multipart-signed',
      detached: true,
      contentLength: canonical.length,
      convertible: true,
    });
  });

  it('then an altered signed entity answers cms-signature-invalid', async () => {
    const msg = clearSign(rsa);
    const i = msg.indexOf('line 7 of');
    msg[i] = 'L'.charCodeAt(0);
    await expect(verifyJws(msg, canonical, rsa.privateKey)).rejects.toMatchObject({
      code: 'cms_signature_invalid',
    });
  });
});

/** An input of `total` bytes made lazily, counting what the reader pulled. */
function lazy(
  head: Buffer,
  fill: Buffer,
  total: number,
): { input: AsyncIterable<Buffer>; pulled: () => number } {
  let pulled = 0;
  return {
    input: (async function* () {
      pulled += head.length;
      yield head;
      while (pulled < total) {
        pulled += fill.length;
        yield fill;
      }
    })(),
    pulled: () => pulled,
  };
}

describe('when an archive input is broken', () => {
  const cases: { name: string; make: () => Buffer; code: string; detail?: RegExp }[] = [
    {
      name: 'bare base64 cut inside a quartet',
      make: () => Buffer.from(der.toString('base64').slice(0, 4 * 50 + 1)),
      code: 'cms_base64_truncated',
    },
    {
      name: 'base64 with a character outside the alphabet',
      make: () => Buffer.from(base64Lines(der, 64).replace(/^(.{1000})./s, '$1*')),
      code: 'cms_base64_invalid',
    },
    {
      name: 'PEM with no END line',
      make: () => Buffer.from(pem.toString().replace(/-----END CMS-----\s*$/, '')),
      code: 'cms_pem_unterminated',
    },
    {
      name: 'PEM with another label',
      make: () => ssl.read(rsa.certFile),
      code: 'cms_malformed',
      detail: /PEM "CERTIFICATE" block/,
    },
    {
      name: 'a MIME entity without a body',
      make: () => Buffer.from('MIME-Version: 1.0\r\nContent-Type: application/pkcs7-mime\r\n'),
      code: 'cms_mime_no_body',
    },
    {
      name: 'a pkcs7-mime entity with an empty body',
      make: () => Buffer.from('Content-Type: application/pkcs7-mime\r\n\r\n'),
      code: 'cms_mime_no_body',
    },
    {
      name: 'a multipart/signed with one part',
      make: () =>
        Buffer.from(
          'Content-Type: multipart/signed; protocol="application/pkcs7-signature"; micalg=sha-256; boundary=b\r\n\r\n--b\r\n\r\nhello\r\n--b--\r\n',
        ),
      code: 'cms_multipart_signed_malformed',
      detail: /one part/,
    },
    {
      name: 'a multipart/signed without a boundary',
      make: () =>
        Buffer.from(
          'Content-Type: multipart/signed; protocol="application/pkcs7-signature"\r\n\r\n--b\r\n',
        ),
      code: 'cms_multipart_signed_malformed',
      detail: /boundary/,
    },
    {
      name: 'MIME nested deeper than the limit',
      make: () => {
        let body = `Content-Type: application/pkcs7-mime\r\nContent-Transfer-Encoding: base64\r\n\r\n${der.toString('base64')}`;
        for (let i = 0; i < 6; i++)
          body = `Content-Type: multipart/mixed; boundary=b${i}\r\n\r\n--b${i}\r\n${body}\r\n--b${i}--\r\n`;
        return Buffer.from(body);
      },
      code: 'cms_mime_too_deep',
    },
    {
      name: 'an .eml with no CMS',
      make: () => Buffer.from('From: a@example.com\nSubject: hi\n\nno attachment here\n'),
      code: 'cms_mime_no_cms',
    },
    {
      name: 'a PDF',
      make: () => Buffer.from('%PDF-1.7\n%\xe2\xe3\n1 0 obj'),
      code: 'cms_malformed',
      detail: /PDF/,
    },
    {
      name: 'plain text',
      make: () => Buffer.from('dear archivist, this is not a CMS object\n'),
      code: 'cms_malformed',
      detail: /neither PEM, base64 nor a MIME entity/,
    },
  ];

  it.each(cases)(
    'then $name answers its problem when converted and analyzed',
    async ({ make, code, detail }) => {
      const convert = convertPkcs7ToJose(chunked(make(), 100), {
        metadata: {},
        resolver: resolverFor([rsa]),
      }).then((r) => collect(r.body));
      await expect(convert).rejects.toMatchObject({
        code,
        ...(detail ? { message: expect.stringMatching(detail) } : {}),
      });
      await expect(analyzePkcs7(chunked(make(), 100))).rejects.toMatchObject({ code });
    },
  );

  it('then a 10 MB header block is refused after reading about 64 KiB of it', async () => {
    const { input, pulled } = lazy(
      Buffer.from('Content-Type: application/pkcs7-mime\r\n'),
      Buffer.from(
        'X-Filler: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n'.repeat(
          100,
        ),
      ),
      10 * 1024 * 1024,
    );
    await expect(analyzePkcs7(input)).rejects.toMatchObject({
      code: 'cms_mime_header_too_large',
      status: 413,
    });
    expect(pulled()).toBeLessThan(128 * 1024);
  });

  it('then a multipart/signed whose boundary never comes is refused after its preamble cap', async () => {
    const { input, pulled } = lazy(
      Buffer.from(
        'Content-Type: multipart/signed; protocol="application/pkcs7-signature"; boundary=zz\r\n\r\n',
      ),
      Buffer.alloc(65536, 'a'),
      100 * 1024 * 1024,
    );
    await expect(analyzePkcs7(input)).rejects.toMatchObject({
      code: 'cms_multipart_signed_malformed',
    });
    expect(pulled()).toBeLessThan(256 * 1024);
  });
});

describe('when a SignedData is converted with its content (withContent)', () => {
  it('then a clear-signed message whose signature fails is cut after its content, never closed', async () => {
    const msg = cms.sign(ssl, 'text.txt', { by: rsa });
    msg[msg.indexOf('line 1500 of')] = 'L'.charCodeAt(0);
    const r = await convertPkcs7ToJose(chunked(msg, 4096), {
      metadata: {},
      resolver: resolverFor([rsa]),
      withContent: true,
    });
    expect(r.contentType).toMatch(/^multipart\/mixed; boundary=/);
    const seen: Buffer[] = [];
    await expect(
      (async () => {
        for await (const c of r.body) seen.push(c);
      })(),
    ).rejects.toMatchObject({ code: 'cms_signature_invalid' });
    const text = Buffer.concat(seen).toString('latin1');
    expect(text).toContain('Content-Type: application/octet-stream');
    expect(text).not.toContain('application/jose+json');
  });
});

describe('when an archive form leaves bytes after its CMS object', () => {
  it('then the input stream is released once the answer is complete (a job reads storage streams)', async () => {
    const withTail = Buffer.concat([pem, Buffer.from('trailing notes\n'.repeat(10_000))]);
    const file = ssl.write('tail.pem', withTail);
    const stream = createReadStream(file, { highWaterMark: 4096 });
    const r = await convertPkcs7ToJose(stream, { metadata: {}, resolver: resolverFor([rsa]) });
    await collect(r.body);
    expect(stream.destroyed).toBe(true);
  });
});
