/**
 * Key usage that tells the truth: certificates made the way users make them (openssl
 * req -x509 and keytool -genkeypair, neither with keyUsage) import as keys enabled for everything
 * their type does, so an RSA signer re-signs and an EC recipient decrypts; analyze names the key
 * the converter really uses and says not convertible, with the reason, when that key cannot; a
 * settings PATCH narrows the usages (enforced by the next analyze and conversion) and never
 * widens them past what the certificate allows. Outputs are checked with jose.
 */
import { execFileSync } from 'node:child_process';
import { X509Certificate, createPrivateKey, randomBytes } from 'node:crypto';
import { TEST_ENGINE } from '../../../support/database.ts';
import { api } from '../../../support/auth.ts';
import * as keyUsages from '../../../shared/db/migrations/009_key_usages.ts';
import {
  ANALYZE,
  OpenSslDir,
  PERMISSIONS,
  convert,
  encryptCms,
  makeKey,
  makeActor,
  openJwe,
  postParts,
  postRaw,
  signCms,
  startTestApp,
  verifyDetached,
} from './helpers.ts';
import type { Actor, Answer, FormValue, Jws, TestApp, TestKey } from './helpers.ts';

let app: TestApp;
let ssl: OpenSslDir;
let actor: Actor;
let keysPath: string;
const data = randomBytes(3_000);
const STOREPASS = 'keytool-pass';

/** keytool -genkeypair into a PKCS#12 keystore (keytool's defaults: no keyUsage). */
function keytoolStore(kid: string, type: string, alg: string[]): TestKey {
  const store = ssl.path(`${kid}.p12`);
  const kt = (args: string[]) =>
    execFileSync('keytool', [...args, '-keystore', store, '-storepass', STOREPASS], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  kt(['-genkeypair', '-alias', kid, ...alg, '-dname', `CN=${kid}`, '-validity', '2']);
  ssl.write(`${kid}.crt`, kt(['-exportcert', '-rfc', '-alias', kid]));
  // The private key, for openssl to sign with (the service gets the keystore itself).
  ssl.run([
    'pkcs12',
    '-in',
    `${kid}.p12`,
    '-nodes',
    '-nocerts',
    '-passin',
    `pass:${STOREPASS}`,
    '-out',
    `${kid}.key`,
  ]);
  return {
    kid,
    type,
    certFile: `${kid}.crt`,
    keyFile: `${kid}.key`,
    privateKey: createPrivateKey(ssl.read(`${kid}.key`)),
    certificate: ssl.run(['x509', '-in', `${kid}.crt`, '-outform', 'DER']),
  };
}

function upload(file: Buffer, fields: Record<string, string>): Promise<Answer> {
  const parts: Array<[string, FormValue]> = [['keystore', { data: file, filename: 'ks' }]];
  for (const [k, v] of Object.entries(fields)) parts.push([k, v]);
  return postParts(app, `${keysPath}/import-keystore`, actor.user, parts);
}

const importPem = (h: TestKey) =>
  upload(Buffer.concat([ssl.read(h.keyFile), ssl.read(h.certFile)]), { kid: h.kid });
const importP12 = (h: TestKey) =>
  upload(ssl.read(`${h.kid}.p12`), { kid: h.kid, password: STOREPASS });

const analyze = async (file: Buffer) =>
  (await postRaw(app, ANALYZE, actor.user, file, 'application/pkcs7-mime')).json<
    Record<string, unknown>
  >();
const patchKey = (kid: string, body: unknown) =>
  api(app, 'PATCH', `${keysPath}/${kid}`, actor.user, body);
const certKey = (h: TestKey) => new X509Certificate(ssl.read(h.certFile)).publicKey;

/** Converts a SignedData by `h` and checks the JWS with jose under the signer's certificate key. */
async function expectResigned(h: TestKey): Promise<void> {
  const r = await convert(app, actor.user, signCms(ssl, h));
  expect([r.status, r.body.toString().slice(0, 200)]).toEqual([200, expect.any(String)]);
  const jws = r.json<Jws>();
  await verifyDetached(jws, data, certKey(h));
  const header = JSON.parse(Buffer.from(jws.protected, 'base64url').toString());
  expect(header.kid).toBe(`${h.kid}#1`);
}

/** Converts an EnvelopedData to `h` and opens the JWE with jose under the recipient's private key. */
async function expectDecrypted(h: TestKey): Promise<void> {
  const r = await convert(app, actor.user, encryptCms(ssl, h));
  expect(r.status).toBe(200);
  const opened = await openJwe(r, h.privateKey);
  expect(opened.plaintext.equals(data)).toBe(true);
  expect(opened.header.recipients[0].header.kid).toBe(`${h.kid}#1`);
}

const expectUsageMismatch = (r: Answer) => {
  expect(r.status).toBe(422);
  expect(r.json()).toMatchObject({ type: expect.stringMatching(/key-usage-mismatch$/) });
};

beforeAll(async () => {
  app = await startTestApp();
  ssl = new OpenSslDir();
  ssl.write('data.bin', data);
  actor = await makeActor(app, [...PERMISSIONS, 'admin.keys.read', 'admin.keys.update']);
  keysPath = `/api/v3/admin/tenants/${actor.tenant.tenantId}/keys`;
});

afterAll(async () => {
  ssl.cleanup();
  await app.stop();
});

describe(`certificates without keyUsage import for every usage their type has (${TEST_ENGINE})`, () => {
  it.each([
    ['openssl req -x509', () => makeKey(ssl, 'ossl-rsa', 'rsa-2048'), importPem],
    [
      'keytool -genkeypair',
      () => keytoolStore('kt-rsa', 'rsa-2048', ['-keyalg', 'RSA', '-keysize', '2048']),
      importP12,
    ],
  ])(
    'when an RSA signer made by %s is imported, then analyze names its key and the conversion re-signs with it (jose verifies)',
    async (_producer, make, importIt) => {
      const h = make();
      const r = await importIt(h);
      expect(r.status).toBe(201);
      expect(r.json<{ keys: unknown[] }>().keys).toEqual([
        expect.objectContaining({
          kid: h.kid,
          usage: 'encrypt',
          usages: ['encrypt', 'sign'],
          allowedUsages: ['encrypt', 'sign'],
        }),
      ]);
      const a = await analyze(signCms(ssl, h));
      expect(a).toMatchObject({
        convertible: true,
        signing: { path: 'signer-key', kids: [h.kid] },
      });
      await expectResigned(h);
    },
  );

  it.each([
    ['openssl req -x509', () => makeKey(ssl, 'ossl-ec', 'ec-p256'), importPem],
    [
      'keytool -genkeypair',
      () => keytoolStore('kt-ec', 'ec-p256', ['-keyalg', 'EC', '-groupname', 'secp256r1']),
      importP12,
    ],
  ])(
    'when an EC recipient made by %s is imported, then analyze names its key for decryption and the conversion opens the EnvelopedData (jose decrypts)',
    async (_producer, make, importIt) => {
      const h = make();
      const r = await importIt(h);
      expect(r.status).toBe(201);
      expect(r.json<{ keys: unknown[] }>().keys).toEqual([
        expect.objectContaining({ kid: h.kid, usage: 'sign', usages: ['encrypt', 'sign'] }),
      ]);
      const a = await analyze(encryptCms(ssl, h));
      expect(a).toMatchObject({ convertible: true, decryption: { kid: h.kid } });
      expect(a.reason).toBeUndefined();
      await expectDecrypted(h);
    },
  );
});

describe(`analyze and PATCH tell what a key may do (${TEST_ENGINE})`, () => {
  let signOnly: TestKey;
  let narrowed: TestKey;

  beforeAll(async () => {
    signOnly = makeKey(ssl, 'ku-sign-ec', 'ec-p256', 'keyUsage=digitalSignature');
    narrowed = makeKey(ssl, 'narrow-rsa', 'rsa-2048');
    expect((await importPem(signOnly)).status).toBe(201);
    expect((await importPem(narrowed)).status).toBe(201);
  });

  it('when an EnvelopedData is for a certificate whose keyUsage is digitalSignature only, then analyze says not convertible, why, and the kid; the conversion refuses the same key', async () => {
    const file = encryptCms(ssl, signOnly);
    const a = await analyze(file);
    expect(a).toMatchObject({
      convertible: false,
      reason: expect.stringMatching(/key ku-sign-ec has usage sign, not encrypt/),
      decryption: { kid: signOnly.kid },
    });
    expectUsageMismatch(await convert(app, actor.user, file));
  });

  it('when PATCH asks for a usage the certificate does not allow, then 422 key-usage-mismatch naming the field; an empty or unknown list is 400; nothing changes', async () => {
    const wide = await patchKey(signOnly.kid, { usages: ['sign', 'encrypt'] });
    expect([wide.status, wide.body]).toEqual([
      422,
      expect.objectContaining({
        type: expect.stringMatching(/key-usage-mismatch$/),
        field: 'usages',
        allowed: ['sign'],
      }),
    ]);
    for (const usages of [[], ['wrap'], ['sign', 'sign'], 'sign']) {
      const r = await patchKey(signOnly.kid, { usages });
      expect([r.status, r.body.field]).toEqual([400, 'usages']);
    }
    const key = await api(app, 'GET', `${keysPath}/${signOnly.kid}`, actor.user);
    expect(key.body).toMatchObject({ usages: ['sign'], allowedUsages: ['sign'] });
  });

  it('when PATCH narrows a key to encrypt, then the next analyze and conversion of a SignedData by it refuse it by name; widening back within the certificate restores them', async () => {
    const file = signCms(ssl, narrowed);
    const r = await patchKey(narrowed.kid, { usages: ['encrypt'] });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      usage: 'encrypt',
      usages: ['encrypt'],
      allowedUsages: ['encrypt', 'sign'],
    });
    expect(await analyze(file)).toMatchObject({
      convertible: false,
      reason: expect.stringMatching(/no key to re-sign with: key narrow-rsa has usage encrypt/),
      signing: { path: 'signer-key', kids: [] },
    });
    expectUsageMismatch(await convert(app, actor.user, file));
    // The JWK names one use again, following the usages enabled now.
    const jwk = (await api(app, 'GET', `${keysPath}/${narrowed.kid}`, actor.user)).body.publicKey;
    expect(jwk).toMatchObject({ use: 'enc', alg: 'RSA-OAEP-256' });

    const back = await patchKey(narrowed.kid, { usages: ['sign', 'encrypt'] });
    expect([back.status, back.body.usages]).toEqual([200, ['encrypt', 'sign']]);
    expect(await analyze(file)).toMatchObject({ convertible: true });
    await expectResigned(narrowed);
  });
});

describe(`a key trapped before migration 009 is widened without a new import (${TEST_ENGINE})`, () => {
  it('when an RSA signer imported for encrypt alone (the old default) goes through migration 009, then it may sign, a PATCH enables sign, and the conversion re-signs with the same kid', async () => {
    const trapped = makeKey(ssl, 'trapped-rsa', 'rsa-2048');
    // What the import made before: the type's default usage alone.
    const r = await upload(Buffer.concat([ssl.read(trapped.keyFile), ssl.read(trapped.certFile)]), {
      kid: trapped.kid,
      usage: 'encrypt',
    });
    expect(r.status).toBe(201);
    // The schema before 009, then 009 again, over this file's own database.
    await keyUsages.down(app.ctx.db);
    await keyUsages.up(app.ctx.db);
    await app.ctx.keys.invalidate(actor.tenant.tenantId, trapped.kid);
    const key = await api(app, 'GET', `${keysPath}/${trapped.kid}`, actor.user);
    expect(key.body).toMatchObject({ usages: ['encrypt'], allowedUsages: ['encrypt', 'sign'] });
    const file = signCms(ssl, trapped);
    expect(await analyze(file)).toMatchObject({
      convertible: false,
      reason: expect.stringMatching(/key trapped-rsa has usage encrypt, not sign/),
    });
    expect((await patchKey(trapped.kid, { usages: ['encrypt', 'sign'] })).status).toBe(200);
    expect(await analyze(file)).toMatchObject({
      convertible: true,
      signing: { kids: [trapped.kid] },
    });
    await expectResigned(trapped);
  });
});
