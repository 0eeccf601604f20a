/**
 * X25519 and X448 key agreement recipients over HTTP (RFC 8418): BouncyCastle writes the
 * EnvelopedData (test/fixtures/java/XdhEnvelope.java; OpenSSL 3.0 cannot) for recipient keys that
 * openssl generates and an EC CA certifies, the keys are imported as PEM keystores, and the JWE
 * for an RSA target is opened with jose. A damaged wrap or another X25519 key answers the one
 * decryption-failed (docs/decisions.md, "Failures that tell nothing").
 */
import { randomBytes } from 'node:crypto';
import { prepareXdh, xdhEnvelopes, xdhKey } from '../../fixtures/xdh-envelope.ts';
import {
  OpenSslDir,
  convert,
  importKey,
  makeActor,
  makeKey,
  openJwe,
  postParts,
  startTestApp,
} from './helpers.ts';
import type { Actor, TestApp, TestKey } from './helpers.ts';

let app: TestApp;
let ssl: OpenSslDir;
let actor: Actor;
let archive: TestKey;
let data: Buffer;

/** The EnvelopedData files, by name, that BouncyCastle writes in one run. */
const JOBS: Record<string, string> = {
  'x-25519-sha256-aes256': 'x-25519.crt,data.bin,%,sha256,aes256',
  'x-25519-sha384-aes128': 'x-25519.crt,data.bin,%,sha384,aes128',
  'x-448-sha512-aes256': 'x-448.crt,data.bin,%,sha512,aes256',
  'x-448-sha256-aes128': 'x-448.crt,data.bin,%,sha256,aes128',
  damaged: 'x-25519.crt,data.bin,%,sha256,aes256,damage',
};
const envelope = (name: string): Buffer => ssl.read(`${name}.der`);

beforeAll(async () => {
  ssl = new OpenSslDir();
  prepareXdh(ssl);
  app = await startTestApp();
  actor = await makeActor(app);
  archive = makeKey(ssl, 'x-archive', 'rsa-2048');
  await importKey(app, actor, ssl, archive);
  await importKey(app, actor, ssl, xdhKey(ssl, 'x-25519', 'X25519'), 'encrypt');
  await importKey(app, actor, ssl, xdhKey(ssl, 'x-other', 'X25519'), 'encrypt');
  // X448 comes as PKCS#12 (PBES2, AES-256), its usage from the certificate's keyAgreement.
  xdhKey(ssl, 'x-448', 'X448');
  ssl.run([
    'pkcs12',
    '-export',
    '-inkey',
    'x-448.key',
    '-in',
    'x-448.crt',
    '-passout',
    'pass:p12-secret',
    '-out',
    'x-448.p12',
  ]);
  const p12 = await postParts(
    app,
    `/api/v3/admin/tenants/${actor.tenant.tenantId}/keys/import-keystore`,
    actor.user,
    [
      [
        'keystore',
        { data: ssl.read('x-448.p12'), type: 'application/x-pkcs12', filename: 'x.p12' },
      ],
      ['password', 'p12-secret'],
      ['kid', 'x-448'],
    ],
  );
  expect(p12.status).toBe(201);
  expect(p12.json().keys).toMatchObject([{ kid: 'x-448', type: 'x448', usage: 'encrypt' }]);
  data = randomBytes(50_000);
  ssl.write('data.bin', data);
  xdhEnvelopes(ssl, JOBS);
}, 60_000);

afterAll(async () => {
  ssl.cleanup();
  await app.stop();
});

describe('X25519 and X448 recipients (RFC 8418)', () => {
  it.each([
    ['x-25519', 'sha256', 'aes256'],
    ['x-25519', 'sha384', 'aes128'],
    ['x-448', 'sha512', 'aes256'],
    ['x-448', 'sha256', 'aes128'],
  ])(
    'when BouncyCastle encrypts to %s with %s and %s, then the JWE for targetKid opens with jose',
    async (kid, hash, wrap) => {
      const r = await convert(app, actor.user, envelope(`${kid}-${hash}-${wrap}`), {
        targetKid: 'x-archive',
      });
      expect(r.status).toBe(200);
      const jwe = await openJwe(r, archive.privateKey);
      expect(jwe.header.recipients.map((x) => x.header.kid)).toEqual(['x-archive#1']);
      expect(jwe.plaintext.equals(data)).toBe(true);
    },
  );

  it('when no targetKid is given, then cms-key-unusable names the way out', async () => {
    const r = await convert(app, actor.user, envelope('x-25519-sha256-aes256'), {});
    expect(r.status).toBe(422);
    expect(r.json().type).toMatch(/\/problems\/cms-key-unusable$/);
    expect(r.json().detail).toMatch(/targetKid/);
  });

  it.each([
    ['the wrapped key is damaged', 'damaged', undefined],
    ['another X25519 key is named', 'x-25519-sha256-aes256', 'x-other'],
  ])('when %s, then decryption-failed', async (_, file, recipientKid) => {
    const r = await convert(app, actor.user, envelope(file), {
      targetKid: 'x-archive',
      ...(recipientKid ? { recipientKid } : {}),
    });
    expect(r.status).toBe(400);
    expect(r.json().type).toMatch(/\/problems\/decryption-failed$/);
  });
});
