/**
 * One output of each form the PKCS#7 → JOSE conversion writes, checked with jwcrypto (
 * a second JOSE implementation beside jose, Debian's python3-jwcrypto 1.1 run by /usr/bin/python3
 * through test/fixtures/jwcrypto-check.py) against the bytes the openssl-made original signed or
 * encrypted: the detached JWS (b64 false, b64 true, and with the content as a part of its own),
 * the General JSON JWS of several signers, the multipart JWE and the JSON JWE, the General JSON
 * JWE of several targets, signed-then-encrypted mail, a certificates-only .p7b's JWK Set, and an
 * outside signer's mail re-signed by the archive key. Fails (never skips) without jwcrypto.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import {
  CONVERT,
  PERMISSIONS,
  OpenSslDir,
  convert,
  encryptCms,
  importKey,
  makeActor,
  makeKey,
  parseMultipart,
  postParts,
  startTestApp,
} from './helpers.ts';
import type { Actor, Answer, Jws, TestApp, TestKey } from './helpers.ts';
import { cms } from '../../../support/fixtures/cms.ts';

const PYTHON = '/usr/bin/python3';
const CHECK = fileURLToPath(new URL('../../fixtures/jwcrypto-check.py', import.meta.url));

let app: TestApp;
let ssl: OpenSslDir;
let actor: Actor;
let archiveActor: Actor;
let keys: Record<'rsaSigner' | 'ecSigner' | 'rsaEnc' | 'ecEnc' | 'archive' | 'outsider', TestKey>;
let binary: Buffer;
/** UTF-8 text, so jwcrypto's public API can take it as an unencoded (b64 false) JSON payload. */
let text: Buffer;

interface SignatureCheck {
  header: Record<string, unknown>;
  payload: 'base64url' | 'json-string' | 'bytes';
}
interface RecipientCheck {
  kid: string;
  alg: string;
  enc: string;
  plaintext: string;
}

/** Runs the jwcrypto checker; a failed check throws with its reason (stderr). */
function jwcrypto<T>(request: Record<string, unknown>): T {
  return JSON.parse(
    execFileSync(PYTHON, [CHECK], {
      input: JSON.stringify(request),
      stdio: ['pipe', 'pipe', 'pipe'],
      maxBuffer: 1 << 28,
    }).toString(),
  ) as T;
}

/** Verifies every signature of a JWS with jwcrypto over `content`, each by the key its kid names. */
function verifyJws(jws: object, content: Buffer, signers: TestKey[]): SignatureCheck[] {
  return jwcrypto<{ signatures: SignatureCheck[] }>({
    kind: 'jws',
    jws,
    content: content.toString('base64'),
    keys: Object.fromEntries(signers.map((k) => [`${k.kid}#1`, ssl.path(k.certFile)])),
  }).signatures;
}

/** Decrypts every recipient of a JWE with jwcrypto, each by the private key its kid names. */
function decryptJwe(jwe: Record<string, unknown>, recipients: TestKey[]): RecipientCheck[] {
  return jwcrypto<{ recipients: RecipientCheck[] }>({
    kind: 'jwe',
    ...jwe,
    keys: Object.fromEntries(recipients.map((k) => [`${k.kid}#1`, ssl.path(k.keyFile)])),
  }).recipients;
}

/** The multipart answer's parts, and its JWE (parts 1 and 2) as the checker takes it. */
function multipartJwe(a: Answer) {
  const { parts, closed } = parseMultipart(a.body, a.headers.get('content-type')!);
  expect(closed).toBe(true);
  return {
    parts,
    jwe: { header: parts[0].body.toString(), body: parts[1].body.toString('base64') },
  };
}

const plaintextOf = (r: RecipientCheck) => Buffer.from(r.plaintext, 'base64');
const crlf = (b: Buffer) => Buffer.from(b.toString('utf8').replace(/\r?\n/g, '\r\n'), 'utf8');

const signWith = (input: string, ...signers: TestKey[]) =>
  cms.sign(ssl, input, { by: signers, binary: true, detached: false, outform: 'DER' });

beforeAll(async () => {
  app = await startTestApp();
  ssl = new OpenSslDir();
  keys = {
    rsaSigner: makeKey(ssl, 'jwc-rsa-signer', 'rsa-2048'),
    ecSigner: makeKey(ssl, 'jwc-ec-signer', 'ec-p256'),
    rsaEnc: makeKey(ssl, 'jwc-rsa-enc', 'rsa-2048'),
    ecEnc: makeKey(ssl, 'jwc-ec-enc', 'ec-p256'),
    archive: makeKey(ssl, 'jwc-archive', 'ec-p384'),
    outsider: makeKey(ssl, 'jwc-outsider', 'ec-p256'),
  };
  actor = await makeActor(app);
  await importKey(app, actor, ssl, keys.rsaSigner, 'sign');
  await importKey(app, actor, ssl, keys.ecSigner, 'sign');
  await importKey(app, actor, ssl, keys.rsaEnc, 'encrypt');
  await importKey(app, actor, ssl, keys.ecEnc, 'encrypt');
  // Another tenant whose archive signing key re-signs what outsiders signed.
  archiveActor = await makeActor(app, [...PERMISSIONS, 'admin.keys.update']);
  await importKey(app, archiveActor, ssl, keys.archive, 'sign');
  const r = await fetch(
    `${app.url}/api/v3/admin/tenants/${archiveActor.tenant.tenantId}/keys/${keys.archive.kid}`,
    {
      method: 'PATCH',
      headers: { authorization: `Bearer ${archiveActor.user}`, 'content-type': 'application/json' },
      body: JSON.stringify({ archiveSigning: true }),
    },
  );
  expect(r.status).toBe(200);
  binary = randomBytes(100_000);
  text = Buffer.from(
    Array.from(
      { length: 800 },
      (_, i) => `Zeile ${i}: Grüße aus Köln, 東京, ½ € — "quoted"\n`,
    ).join(''),
  );
  ssl.write('data.bin', binary);
  ssl.write('text.txt', text);
});

afterAll(async () => {
  ssl.cleanup();
  await app.stop();
});

it('when /usr/bin/python3 is asked for jwcrypto, then Debian’s python3-jwcrypto answers', () => {
  const version = execFileSync(PYTHON, [
    '-c',
    'import importlib.metadata as m, jwcrypto; print(m.version("jwcrypto"))',
  ])
    .toString()
    .trim();
  expect(version).toMatch(/^\d+\.\d+/);
});

describe('SignedData → detached JWS, verified by jwcrypto', () => {
  it.each([
    ['UTF-8 text', 'text.txt', () => text, 'json-string'],
    ['binary (not UTF-8)', 'data.bin', () => binary, 'bytes'],
  ] as const)(
    'when the content is %s and the metadata is {}, then the b64 false JWS verifies over the original bytes',
    async (_name, file, content, route) => {
      const r = await convert(app, actor.user, signWith(file, keys.rsaSigner));
      expect(r.status).toBe(200);
      const [check] = verifyJws(r.json(), content(), [keys.rsaSigner]);
      expect(check.payload).toBe(route);
      expect(check.header).toMatchObject({
        alg: 'RS256',
        kid: `${keys.rsaSigner.kid}#1`,
        b64: false,
        crit: ['b64'],
      });
    },
  );

  it('when the metadata asks for b64 true, then the RFC 7515 Appendix F JWS verifies over the base64url of the original bytes', async () => {
    const r = await convert(app, actor.user, signWith('data.bin', keys.ecSigner), {
      b64: true,
      signerKid: keys.ecSigner.kid,
    });
    expect(r.status).toBe(200);
    const [check] = verifyJws(r.json(), binary, [keys.ecSigner]);
    expect(check.payload).toBe('base64url');
    expect(check.header).toMatchObject({ alg: 'ES256', kid: `${keys.ecSigner.kid}#1` });
    expect(check.header.b64).toBeUndefined();
  });

  it('when Accept is multipart/mixed, then part 1 is the original content and the JWS of part 2 verifies over it', async () => {
    const r = await convert(app, actor.user, signWith('data.bin', keys.ecSigner), {}, undefined, {
      accept: 'multipart/mixed',
    });
    expect(r.status).toBe(200);
    const { parts, closed } = parseMultipart(r.body, r.headers.get('content-type')!);
    expect(closed).toBe(true);
    expect(parts[0].body.equals(binary)).toBe(true);
    verifyJws(JSON.parse(parts[1].body.toString()), binary, [keys.ecSigner]);
  });

  it('when two signers whose keys the tenant holds signed, then jwcrypto verifies each signature of the General JSON JWS alone with its own key', async () => {
    const r = await convert(app, actor.user, signWith('text.txt', keys.rsaSigner, keys.ecSigner));
    expect(r.status).toBe(200);
    const general = r.json<{ signatures: Jws[] }>();
    expect(general.signatures).toHaveLength(2);
    const checks = verifyJws(general, text, [keys.rsaSigner, keys.ecSigner]);
    expect(checks.map((c) => c.header.alg).sort()).toEqual(['ES256', 'RS256']);
    for (const c of checks) expect(c.header.kw_signers).toHaveLength(2);
  });

  it('when an outsider signed and the tenant has an archive key, then the archive key’s JWS verifies and its header records the outsider (kw_signers)', async () => {
    const r = await convert(app, archiveActor.user, signWith('data.bin', keys.outsider));
    expect(r.status).toBe(200);
    const [check] = verifyJws(r.json(), binary, [keys.archive]);
    expect(check.header).toMatchObject({ alg: 'ES384', kid: `${keys.archive.kid}#1` });
    const [signer] = check.header.kw_signers as Array<{ x5c: string[]; verified: string }>;
    expect(signer.x5c[0]).toBe(keys.outsider.certificate.toString('base64'));
    expect(signer.verified).toBe('signature');
  });

  it('when the checker is given another content byte or another key, then jwcrypto refuses: its passes are not vacuous', async () => {
    const r = await convert(app, actor.user, signWith('data.bin', keys.ecSigner));
    expect(r.status).toBe(200);
    const changed = Buffer.from(binary);
    changed[changed.length >> 1] ^= 1;
    expect(() => verifyJws(r.json(), changed, [keys.ecSigner])).toThrow(/Verification failed/);
    // The outsider's certificate given for the signer's kid.
    const wrongKey = { ...keys.ecSigner, certFile: keys.outsider.certFile };
    expect(() => verifyJws(r.json(), binary, [wrongKey])).toThrow(/Verification failed/);
  });
});

describe('EnvelopedData → JWE, decrypted by jwcrypto', () => {
  it.each([
    ['{}', {}, 'A256GCM'],
    ['contentEncryption preserve', { contentEncryption: 'preserve' }, 'A256CBC-HS512'],
  ] as const)(
    'when the metadata is %s, then the multipart JWE decrypts to the original bytes',
    async (_name, metadata, enc) => {
      const file = encryptCms(ssl, keys.rsaEnc);
      const r = await convert(app, actor.user, file, metadata);
      expect(r.status).toBe(200);
      const [check] = decryptJwe(multipartJwe(r).jwe, [keys.rsaEnc]);
      expect(check).toMatchObject({ kid: `${keys.rsaEnc.kid}#1`, alg: 'RSA-OAEP-256', enc });
      expect(plaintextOf(check).equals(binary)).toBe(true);
    },
  );

  it('when targetKid lists an RSA and an EC key, then jwcrypto decrypts each recipient of the General JSON JWE alone with its own key', async () => {
    const file = encryptCms(ssl, keys.rsaEnc);
    const r = await convert(app, actor.user, file, {
      targetKid: [keys.rsaEnc.kid, keys.ecEnc.kid],
    });
    expect(r.status).toBe(200);
    const checks = decryptJwe(multipartJwe(r).jwe, [keys.rsaEnc, keys.ecEnc]);
    expect(checks.map((c) => [c.kid, c.alg])).toEqual([
      [`${keys.rsaEnc.kid}#1`, 'RSA-OAEP-256'],
      [`${keys.ecEnc.kid}#1`, 'ECDH-ES+A256KW'],
    ]);
    for (const c of checks) expect(plaintextOf(c).equals(binary)).toBe(true);
    // Not vacuous: the EC recipient's kid given another private key does not open it.
    const wrongKey = { ...keys.ecEnc, keyFile: keys.ecSigner.keyFile };
    expect(() => decryptJwe(multipartJwe(r).jwe, [keys.rsaEnc, wrongKey])).toThrow();
  });

  it('when mail to two held recipients is converted without targetKid, then jwcrypto decrypts each recipient of the JWE with its own key', async () => {
    const file = cms.encrypt(ssl, 'data.bin', {
      to: [keys.rsaEnc, keys.ecEnc],
      cipher: 'aes-256-cbc',
      binary: true,
      outform: 'DER',
    });
    const r = await convert(app, actor.user, file);
    expect(r.status).toBe(200);
    const checks = decryptJwe(multipartJwe(r).jwe, [keys.rsaEnc, keys.ecEnc]);
    expect(checks.map((c) => c.kid)).toEqual([`${keys.rsaEnc.kid}#1`, `${keys.ecEnc.kid}#1`]);
    for (const c of checks) expect(plaintextOf(c).equals(binary)).toBe(true);
  });

  it('when Accept is application/jose+json, then the one JSON JWE decrypts to the original bytes', async () => {
    const file = cms.encrypt(ssl, 'text.txt', {
      to: { recip: keys.ecEnc },
      cipher: 'aes-256-cbc',
      binary: true,
      outform: 'DER',
    });
    const r = await postParts(
      app,
      CONVERT,
      actor.user,
      [
        ['metadata', '{}'],
        ['file', { data: file }],
      ],
      { accept: 'application/jose+json' },
    );
    expect(r.status).toBe(200);
    const [check] = decryptJwe({ jwe: r.json() }, [keys.ecEnc]);
    expect(check.alg).toBe('ECDH-ES+A256KW');
    expect(plaintextOf(check).equals(text)).toBe(true);
  });

  it('when signed-then-encrypted mail is converted, then the JWE holds the clear-signed message byte for byte and its third part’s JWS verifies over the signed entity', async () => {
    ssl.write('signed.eml', cms.sign(ssl, 'text.txt', { by: keys.ecSigner }));
    const mail = cms.encrypt(ssl, 'signed.eml', { to: keys.rsaEnc, cipher: 'aes256' });
    const r = await convert(app, actor.user, mail);
    expect(r.status).toBe(200);
    const { parts, jwe } = multipartJwe(r);
    expect(parts.map((p) => p.contentType)).toEqual([
      'application/jose+json',
      'application/octet-stream',
      'application/jose+json',
    ]);
    const [check] = decryptJwe(jwe, [keys.rsaEnc]);
    expect(plaintextOf(check).equals(crlf(ssl.read('signed.eml')))).toBe(true);
    // openssl cms -sign writes the entity as the text with CRLF line ends, no header of its own.
    const [signature] = verifyJws(JSON.parse(parts[2].body.toString()), crlf(text), [
      keys.ecSigner,
    ]);
    expect(signature).toMatchObject({ payload: 'json-string', header: { alg: 'ES256' } });
  });

  it('when Outlook’s form (an opaque-signed entity, openssl cms -sign -nodetach, then encrypted) is converted, then the JWE holds the signed content and its third part’s JWS verifies over it', async () => {
    ssl.write('opaque.eml', cms.sign(ssl, 'text.txt', { by: keys.ecSigner, detached: false }));
    const mail = cms.encrypt(ssl, 'opaque.eml', { to: keys.rsaEnc, cipher: 'aes256' });
    const r = await convert(app, actor.user, mail);
    expect(r.status).toBe(200);
    const { parts, jwe } = multipartJwe(r);
    expect(parts.map((p) => p.contentType)).toEqual([
      'application/jose+json',
      'application/octet-stream',
      'application/jose+json',
    ]);
    const [check] = decryptJwe(jwe, [keys.rsaEnc]);
    expect(plaintextOf(check).equals(crlf(text))).toBe(true);
    const [signature] = verifyJws(JSON.parse(parts[2].body.toString()), crlf(text), [
      keys.ecSigner,
    ]);
    expect(signature).toMatchObject({ payload: 'json-string', header: { alg: 'ES256' } });
  });
});

describe('certificates-only SignedData → JWK Set, read by jwcrypto', () => {
  it('when a .p7b made by openssl crl2pkcs7 is converted, then jwcrypto imports the JWK Set and each key is its certificate’s, with x5c', async () => {
    const p7b = ssl.run([
      'crl2pkcs7',
      '-nocrl',
      '-certfile',
      keys.ecSigner.certFile,
      '-certfile',
      keys.rsaEnc.certFile,
      '-outform',
      'DER',
    ]);
    const r = await convert(app, actor.user, p7b);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^application\/jwk-set\+json/);
    const { keys: checked } = jwcrypto<{ keys: Array<{ kty: string }> }>({
      kind: 'jwks',
      jwks: r.body.toString(),
      certificates: [ssl.path(keys.ecSigner.certFile), ssl.path(keys.rsaEnc.certFile)],
    });
    expect(checked.map((k) => k.kty)).toEqual(['EC', 'RSA']);
  });
});
