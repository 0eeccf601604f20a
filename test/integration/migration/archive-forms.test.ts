/**
 * Archive forms over HTTP: files as `openssl cms` writes them by default
 * (S/MIME), with `-outform PEM`, clear-signed with `-sign` (with and without `-text`), and a mail
 * holding a .p7m attachment, sent to convert and analyze; results checked with jose against the
 * bytes the CMS object carries (for clear-signed mail, the signed MIME entity). Broken wrappers
 * answer their own problem before the connection closes, without the server reading them whole.
 */
import { flattenedDecrypt } from 'jose';
import {
  ANALYZE,
  OpenSslDir,
  convert,
  importKey,
  makeActor,
  makeKey,
  openJwe,
  parseMultipart,
  postParts,
  postRaw,
  postWithDeadline,
  protectedOf,
  publicOf,
  startTestApp,
  verifyDetached,
} from './helpers.ts';
import type { Actor, Jws, TestApp, TestKey } from './helpers.ts';
import { cms } from '../../../support/fixtures/cms.ts';

let app: TestApp;
let ssl: OpenSslDir;
let actor: Actor;
let rsa: TestKey;
let signer: TestKey;
let ec: TestKey;
let ecEnc: TestKey;
const TEXT = Buffer.from(
  Array.from({ length: 3000 }, (_, i) => `archived line ${i}: a = b\tc`).join('\n') + '\n',
);
const crlf = (b: Buffer) => Buffer.from(b.toString('latin1').replace(/\r?\n/g, '\r\n'), 'latin1');

beforeAll(async () => {
  // A small cap for the flattened JSON JWE, so the 413 beyond it is reachable with small files.
  app = await startTestApp({ CONVERT_JSON_MAX_BYTES: '65536' });
  ssl = new OpenSslDir();
  rsa = makeKey(ssl, 'arc-rsa', 'rsa-2048');
  signer = makeKey(ssl, 'arc-signer', 'rsa-2048');
  ec = makeKey(ssl, 'arc-ec', 'ec-p256');
  ecEnc = makeKey(ssl, 'arc-ec-enc', 'ec-p384');
  actor = await makeActor(app);
  await importKey(app, actor, ssl, rsa);
  await importKey(app, actor, ssl, signer, 'sign');
  await importKey(app, actor, ssl, ec);
  await importKey(app, actor, ssl, ecEnc, 'encrypt');
  ssl.write('mail.txt', TEXT);
});

afterAll(async () => {
  ssl.cleanup();
  await app.stop();
});

const encrypt = (args: string[]) => cms.encrypt(ssl, 'mail.txt', { to: rsa, extra: args });
const clearSign = (k: TestKey, args: string[] = []) =>
  cms.sign(ssl, 'mail.txt', { by: k, extra: args });

describe('when archive forms of an EnvelopedData are converted over HTTP', () => {
  it.each([
    ['the default S/MIME output of openssl cms -encrypt (3DES)', []],
    ['S/MIME with -aes256', ['-aes256']],
    ['-outform PEM', ['-outform', 'PEM', '-aes128']],
  ])('then %s converts to a JWE that jose opens to the CMS content', async (_name, args) => {
    const a = await convert(app, actor.user, encrypt(args as string[]));
    expect(a.status).toBe(200);
    const jwe = await openJwe(a, rsa.privateKey);
    expect(jwe.closed).toBe(true);
    // Without -binary, openssl encrypts the CRLF-canonical text (RFC 8551 section 3.1.1).
    expect(jwe.plaintext.equals(crlf(TEXT))).toBe(true);
  });

  it('then a mail with the .p7m as an attachment converts, sent raw to analyze as message/rfc822 too', async () => {
    const p7m = encrypt(['-aes256']);
    const eml = Buffer.concat([
      Buffer.from(
        'From: archive@example.com\r\nSubject: quarterly\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed;\r\n\tboundary="==mix=="\r\n\r\npreamble text\r\n--==mix==\r\nContent-Type: text/plain\r\n\r\nplease find attached\r\n--==mix==\r\n',
      ),
      p7m,
      Buffer.from('\r\n--==mix==--\r\n'),
    ]);
    const c = await convert(app, actor.user, eml);
    expect(c.status).toBe(200);
    expect((await openJwe(c, rsa.privateKey)).plaintext.equals(crlf(TEXT))).toBe(true);
    const a = await postRaw(app, ANALYZE, actor.user, eml, 'message/rfc822');
    expect(a.status).toBe(200);
    expect(a.json()).toMatchObject({
      contentType: 'envelopedData',
      container: 'smime',
      recipients: [{ kid: 'arc-rsa' }],
      convertible: true,
    });
  });
});

describe('when the key is wrapped with Triple-DES (RFC 3217) for an EC recipient', () => {
  it('then the S/MIME of openssl cms -encrypt -des3 converts (it answered 415 before) and jose opens it', async () => {
    const file = cms.encrypt(ssl, 'mail.txt', { to: ecEnc, cipher: 'des3' });
    const a = await convert(app, actor.user, file);
    expect(a.status).toBe(200);
    expect((await openJwe(a, ecEnc.privateKey)).plaintext.equals(crlf(TEXT))).toBe(true);
  });
});

describe('when clear-signed mail (multipart/signed) is converted over HTTP', () => {
  it('then the JWS verifies with jose over the signed MIME entity (openssl cms -sign)', async () => {
    const a = await convert(app, actor.user, clearSign(signer));
    expect(a.status).toBe(200);
    const jws = a.json<Jws>();
    expect(protectedOf(jws)).toMatchObject({ alg: 'RS256', b64: false });
    await verifyDetached(jws, crlf(TEXT), publicOf(signer));
  });

  it('then with -text the signed entity is its Content-Type header, blank line and body', async () => {
    const a = await convert(app, actor.user, clearSign(ec, ['-text']));
    expect(a.status).toBe(200);
    const entity = Buffer.concat([Buffer.from('Content-Type: text/plain\r\n\r\n'), crlf(TEXT)]);
    await verifyDetached(a.json<Jws>(), entity, publicOf(ec));
  });

  it('then the analyzer reports multipart-signed, through a form too', async () => {
    const a = await postParts(app, ANALYZE, actor.user, [
      ['file', { data: clearSign(signer), filename: 'signed.eml', type: 'message/rfc822' }],
    ]);
    expect(a.status).toBe(200);
    expect(a.json()).toMatchObject({
      contentType: 'signedData',
      container: 'multipart-signed',
      contentLength: crlf(TEXT).length,
      signers: [{ kid: 'arc-signer' }],
      convertible: true,
    });
  });
});

describe('when a SignedData is converted with Accept: multipart/mixed', () => {
  it.each([
    {
      name: 'an attached DER SignedData',
      make: () =>
        cms.sign(ssl, 'mail.txt', { by: signer, detached: false, binary: true, outform: 'DER' }),
      content: () => TEXT,
    },
    { name: 'clear-signed mail', make: () => clearSign(signer), content: () => crlf(TEXT) },
  ])(
    'then $name answers its content, then the JWS that jose verifies over it',
    async ({ make, content }) => {
      const a = await convert(app, actor.user, make(), {}, undefined, {
        accept: 'multipart/mixed',
      });
      expect(a.status).toBe(200);
      const { parts, closed } = parseMultipart(a.body, a.headers.get('content-type')!);
      expect(closed).toBe(true);
      expect(parts.map((p) => p.contentType)).toEqual([
        'application/octet-stream',
        'application/jose+json',
      ]);
      expect(parts[0].body.equals(content())).toBe(true);
      await verifyDetached(JSON.parse(parts[1].body.toString()), parts[0].body, publicOf(signer));
    },
  );

  it('then without that Accept the answer stays the JWS object alone', async () => {
    const a = await convert(app, actor.user, clearSign(signer), {}, undefined, {
      accept: 'application/octet-stream, multipart/mixed;q=0.5',
    });
    expect(a.status).toBe(200);
    expect(a.headers.get('content-type')).toBe('application/octet-stream');
    await verifyDetached(a.json<Jws>(), crlf(TEXT), publicOf(signer));
  });
});

describe('when signed-then-encrypted mail (openssl cms -sign | openssl cms -encrypt) is converted', () => {
  it('then the JWE holds the clear-signed message and its third part is a JWS jose verifies over the signed entity', async () => {
    const signed = clearSign(signer);
    ssl.write('signed.eml', signed);
    const mail = cms.encrypt(ssl, 'signed.eml', { to: rsa, cipher: 'aes256' });
    const a = await convert(app, actor.user, mail);
    expect(a.status).toBe(200);
    const jwe = await openJwe(a, rsa.privateKey);
    expect(jwe.closed).toBe(true);
    expect(jwe.plaintext.equals(crlf(signed))).toBe(true);
    expect(jwe.parts).toHaveLength(3);
    expect(jwe.parts[2].contentType).toBe('application/jose+json');
    await verifyDetached(JSON.parse(jwe.parts[2].body.toString()), crlf(TEXT), publicOf(signer));
  });
});

describe("when Outlook's form (an opaque-signed entity inside the envelope: openssl cms -sign -nodetach | openssl cms -encrypt) is converted", () => {
  it('then the JWE holds the signed content and its third part is a JWS jose verifies over it, naming the original signer', async () => {
    // Regression: the S/MIME entity of the SignedData was passed on as data, its signer neither
    // verified nor recorded, and nothing said so.
    const opaque = clearSign(signer, ['-nodetach']);
    expect(opaque.toString('latin1')).toMatch(/smime-type=signed-data/);
    ssl.write('opaque.eml', opaque);
    const mail = cms.encrypt(ssl, 'opaque.eml', { to: rsa, cipher: 'aes256' });
    const a = await convert(app, actor.user, mail);
    expect(a.status).toBe(200);
    const jwe = await openJwe(a, rsa.privateKey);
    expect(jwe.closed).toBe(true);
    // What the SignedData carries: openssl signs the CRLF-canonical text.
    expect(jwe.plaintext.equals(crlf(TEXT))).toBe(true);
    expect(jwe.parts).toHaveLength(3);
    expect(jwe.parts[2].contentType).toBe('application/jose+json');
    const jws = JSON.parse(jwe.parts[2].body.toString());
    await verifyDetached(jws, crlf(TEXT), publicOf(signer));
    expect(protectedOf(jws).kw_signers).toEqual([
      expect.objectContaining({ verified: 'signature' }),
    ]);
  });

  it('then a signature that does not match its content fails as the one decryption-failed, before any of the answer', async () => {
    const opaque = clearSign(signer, ['-nodetach']).toString('latin1');
    // One character of the base64 SignedData's content changed (inside the content, so the DER
    // stays well formed and only the digest differs).
    const b64 = opaque.slice(opaque.search(/\r?\n\r?\n/)).replace(/\s+/g, '');
    const der = Buffer.from(b64, 'base64');
    const at = der.indexOf(Buffer.from('archived line 1500'));
    der[at] ^= 0x20;
    const lines = der
      .toString('base64')
      .match(/.{1,64}/g)!
      .join('\n');
    ssl.write(
      'opaque-bad.eml',
      Buffer.from(`${opaque.slice(0, opaque.search(/\r?\n\r?\n/))}\n\n${lines}\n`, 'latin1'),
    );
    const mail = cms.encrypt(ssl, 'opaque-bad.eml', { to: rsa, cipher: 'aes256' });
    const a = await convert(app, actor.user, mail);
    // The opaque form's answer is held to its end: the failure is a problem before it begins.
    expect(a.status).toBe(400);
    expect(a.json().type).toMatch(/\/problems\/decryption-failed$/);
  });
});

describe('when a conversion is asked for as application/jose+json (flattened JSON JWE)', () => {
  it('then an enveloped input answers one JSON JWE that jose flattenedDecrypt opens as it is', async () => {
    const small = Buffer.from('a short archived letter\n'.repeat(100));
    ssl.write('small.txt', small);
    const file = cms.encrypt(ssl, 'small.txt', { to: rsa, cipher: 'aes256', binary: true });
    const a = await convert(app, actor.user, file, {}, undefined, {
      accept: 'application/jose+json',
    });
    expect(a.status).toBe(200);
    expect(a.headers.get('content-type')).toBe('application/jose+json');
    const jwe = a.json<Record<string, string>>();
    expect(Object.keys(jwe).sort()).toEqual(
      ['ciphertext', 'encrypted_key', 'header', 'iv', 'protected', 'tag'].sort(),
    );
    const { plaintext } = await flattenedDecrypt(jwe as never, rsa.privateKey);
    expect(Buffer.from(plaintext).equals(small)).toBe(true);
  });

  it('then content over CONVERT_JSON_MAX_BYTES answers 413 payload-too-large, and multipart/mixed still works', async () => {
    const file = encrypt(['-aes256']); // about 80 KB of content, over this app's 64 KiB cap
    const a = await convert(app, actor.user, file, {}, undefined, {
      accept: 'application/jose+json',
    });
    expect(a.status).toBe(413);
    expect(a.json().detail).toMatch(/CONVERT_JSON_MAX_BYTES/);
    expect((await convert(app, actor.user, file)).status).toBe(200);
  });

  it('then a signed and encrypted input, whose result has a JWS part too, answers 406', async () => {
    ssl.write('note.txt', Buffer.from('a short signed note\n'));
    ssl.write('signed2.eml', cms.sign(ssl, 'note.txt', { by: signer }));
    const mail = cms.encrypt(ssl, 'signed2.eml', { to: rsa, cipher: 'aes256' });
    const a = await convert(app, actor.user, mail, {}, undefined, {
      accept: 'application/jose+json',
    });
    expect(a.status).toBe(406);
    expect(a.json().type).toMatch(/\/problems\/not-acceptable$/);
  });
});

describe('when a broken archive input is sent', () => {
  it('then a 10 MB header block answers cms-mime-header-too-large as a problem before the connection closes', async () => {
    const body = Buffer.concat([
      Buffer.from('Content-Type: application/pkcs7-mime\r\n'),
      Buffer.alloc(10 * 1024 * 1024, 'X-Filler: a\r\n'),
    ]);
    const r = await postWithDeadline(
      `${app.url}${ANALYZE}`,
      { authorization: `Bearer ${actor.user}`, 'content-type': 'message/rfc822' },
      body,
      15_000,
    );
    expect(r.status).toBe(413);
    expect(r.contentType).toContain('application/problem+json');
    expect(JSON.parse(r.body.toString()).type).toMatch(/\/problems\/cms-mime-header-too-large$/);
  });

  it.each([
    {
      name: 'a PEM with no end line',
      make: () =>
        Buffer.from(
          encrypt(['-outform', 'PEM'])
            .toString()
            .replace(/-----END CMS-----\s*$/, ''),
        ),
      slug: 'cms-pem-unterminated',
    },
    {
      name: 'an .eml with no CMS',
      make: () => Buffer.from('From: a@example.com\r\n\r\njust text\r\n'),
      slug: 'cms-mime-no-cms',
    },
    { name: 'a JSON file', make: () => Buffer.from('{"not":"cms"}'), slug: 'cms-malformed' },
  ])('then $name answers $slug on convert', async ({ make, slug }) => {
    const a = await convert(app, actor.user, make());
    expect(a.status).toBeGreaterThanOrEqual(400);
    expect(a.headers.get('content-type')).toContain('application/problem+json');
    expect(a.json().type).toMatch(new RegExp(`/problems/${slug}$`));
  });
});
