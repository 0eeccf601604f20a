/**
 * Signature algorithms beyond SHA-2: RSASSA-PSS keys and certificates (id-RSASSA-PSS in
 * the SubjectPublicKeyInfo), Ed448 (RFC 8419) and SHA-3 digests (RFC 9688), each from a real
 * producer made here: openssl (`cms -sign -md sha3-256`, `-keyopt rsa_padding_mode:pss`, `req -x509`
 * with an RSA-PSS key), Python's `cryptography` (PKCS#7 with PSS) and BouncyCastle
 * (test/fixtures/java/BcSigned.java: Ed448, ECDSA and RSA over SHA-3, which OpenSSL 3.0 cannot
 * write). Every JWS is checked against the original bytes by jose, or, for Ed448 which jose 6
 * cannot verify, by Python's `cryptography` over the JWS signing input.
 */
import { randomBytes } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { flattenedVerify } from 'jose';
import {
  RSA_PSS_384,
  compileBcSigned,
  keyWithCert as keyWithCertIn,
  opensslSign as opensslSignIn,
  BC_JOBS,
  producerCases,
  pssParams,
  pythonPss as pythonPssIn,
  rsaPublicOf as rsaPublicOfIn,
  runBcSigned,
  verifyEd448 as verifyEd448In,
  withSigner,
} from '../../fixtures/signature-producers.ts';
import {
  ANALYZE,
  OpenSslDir,
  PERMISSIONS,
  convert,
  makeActor,
  postParts,
  postRaw,
  protectedOf,
  startTestApp,
} from './helpers.ts';
import type { Actor, Answer, Jws, TestApp } from './helpers.ts';

let app: TestApp;
let ssl: OpenSslDir;
let actor: Actor;
let data: Buffer;
let big: Buffer;

const keyWithCert = (name: string, genpkey: string[]) => keyWithCertIn(ssl, name, genpkey);
const opensslSign = (name: string, args: string[]) => opensslSignIn(ssl, name, args);
const pythonPss = (name: string, hash: 'SHA256' | 'SHA384' | 'SHA512', salt: string) =>
  pythonPssIn(ssl, name, hash, salt);
const verifyEd448 = (jws: Jws, content: Buffer, certFile: string) =>
  verifyEd448In(ssl, jws, content, certFile);
const rsaPublicOf = (name: string) => rsaPublicOfIn(ssl, name);

async function verifyJose(jws: Jws, content: Buffer, key: KeyObject): Promise<string> {
  const b64 = protectedOf(jws).b64 !== false;
  const { protectedHeader } = await flattenedVerify(
    { ...jws, payload: b64 ? content.toString('base64url') : content },
    key,
  );
  return String(protectedHeader?.alg);
}

async function importPem(kid: string, files: string[], usage?: string): Promise<Answer> {
  return postParts(
    app,
    `/api/v3/admin/tenants/${actor.tenant.tenantId}/keys/import-keystore`,
    actor.user,
    [
      [
        'keystore',
        {
          data: Buffer.concat(files.map((f) => ssl.read(f))),
          type: 'application/x-pem-file',
          filename: `${kid}.pem`,
        },
      ],
      ...(kid ? [['kid', kid] as [string, string]] : []),
      ...(usage ? [['usage', usage] as [string, string]] : []),
    ],
  );
}

const signersOf = (jws: Jws) =>
  protectedOf(jws).kw_signers as Array<{ digestAlg: string; verified: string; x5c: string[] }>;

const bc = (name: string): Buffer => ssl.read(`${name}.der`);

beforeAll(async () => {
  ssl = new OpenSslDir();
  compileBcSigned(ssl);
  data = randomBytes(40_000);
  big = randomBytes(9 * 1024 * 1024);
  ssl.write('data.bin', data);
  ssl.write('big.bin', big);
  // Outside signers: their certificates travel in the files, their keys never reach the tenant.
  keyWithCert('ed448-signer', ['-algorithm', 'ed448']);
  keyWithCert('ec-signer', ['-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256']);
  keyWithCert('rsa-signer', ['-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048']);
  keyWithCert('pss-signer', ['-algorithm', 'RSA-PSS', '-pkeyopt', 'rsa_keygen_bits:2048']);
  keyWithCert('pss384-signer', RSA_PSS_384);
  // The tenant's own signing keys: an RSA-PSS key bound to SHA-384, one unbound (PKCS#12), an Ed448 key.
  keyWithCert('pss-archive', RSA_PSS_384);
  keyWithCert('pss-any', ['-algorithm', 'RSA-PSS', '-pkeyopt', 'rsa_keygen_bits:3072']);
  keyWithCert('ed448-archive', ['-algorithm', 'ed448']);
  ssl.run([
    'pkcs12',
    '-export',
    '-inkey',
    'pss-any.key',
    '-in',
    'pss-any.crt',
    '-passout',
    'pass:p12-secret',
    '-out',
    'pss-any.p12',
  ]);
  runBcSigned(
    ssl,
    Object.entries(BC_JOBS).map(([name, job]) => job.replace('%', `${name}.der`)),
  );
  app = await startTestApp();
  actor = await makeActor(app, [...PERMISSIONS, 'admin.keys.update']);
}, 120_000);

afterAll(async () => {
  ssl.cleanup();
  await app.stop();
});

describe('RSASSA-PSS and Ed448 keys at keystore import', () => {
  it('when RSA-PSS and Ed448 keys come as PEM and PKCS#12, then they import as signing keys of their own types', async () => {
    const pss = await importPem('pss-archive', ['pss-archive.key', 'pss-archive.crt']);
    expect(pss.status).toBe(201);
    expect(pss.json().keys).toMatchObject([
      { kid: 'pss-archive', type: 'rsa-pss-2048', usage: 'sign' },
    ]);
    const ed = await importPem('ed448-archive', ['ed448-archive.key', 'ed448-archive.crt']);
    expect(ed.status).toBe(201);
    expect(ed.json().keys).toMatchObject([{ kid: 'ed448-archive', type: 'ed448', usage: 'sign' }]);
    const p12 = await postParts(
      app,
      `/api/v3/admin/tenants/${actor.tenant.tenantId}/keys/import-keystore`,
      actor.user,
      [
        [
          'keystore',
          { data: ssl.read('pss-any.p12'), type: 'application/x-pkcs12', filename: 'p.p12' },
        ],
        ['password', 'p12-secret'],
        ['kid', 'pss-any'],
      ],
    );
    expect(p12.status).toBe(201);
    expect(p12.json().keys).toMatchObject([
      { kid: 'pss-any', type: 'rsa-pss-3072', usage: 'sign' },
    ]);
  });

  it('when an RSA-PSS or Ed448 certificate comes without its key, then it is a verify-only key', async () => {
    for (const [name, type] of [
      ['pss384-signer', 'rsa-pss-2048'],
      ['ed448-signer', 'ed448'],
    ]) {
      const r = await importPem(`${name}-cert`, [`${name}.crt`]);
      expect(r.status).toBe(201);
      expect(r.json().keys).toMatchObject([{ kid: `${name}-cert`, type, usage: 'verify' }]);
    }
  });

  it('when an RSA-PSS key is bound to SHA-1, then the signing import is keystore-unsupported-algorithm naming why', async () => {
    keyWithCert('pss-sha1', [
      '-algorithm',
      'RSA-PSS',
      '-pkeyopt',
      'rsa_keygen_bits:2048',
      '-pkeyopt',
      'rsa_pss_keygen_md:sha1',
    ]);
    const r = await importPem('pss-sha1', ['pss-sha1.key', 'pss-sha1.crt']);
    expect(r.status).toBe(415);
    expect(r.json()).toMatchObject({
      type: expect.stringMatching(/\/problems\/keystore-unsupported-algorithm$/),
      detail: expect.stringContaining('restricted to hash sha1'),
    });
  });
});

describe('SignedData by every producer, re-signed by the RSA-PSS and Ed448 keys', () => {
  const cases = producerCases(() => ssl);

  it.each(cases)(
    'when the $name file is converted with signerKid pss-archive, then jose verifies PS384 over the original bytes',
    async ({ file, digestAlg }) => {
      const r = await convert(app, actor.user, file(), { signerKid: 'pss-archive' });
      expect(r.status).toBe(200);
      const jws = r.json<Jws>();
      // The key is bound to SHA-384: the alg follows the key, never the input's digest.
      expect(await verifyJose(jws, data, rsaPublicOf('pss-archive'))).toBe('PS384');
      expect(signersOf(jws)).toEqual([
        expect.objectContaining({ digestAlg, verified: 'signature' }),
      ]);
    },
  );

  it.each(cases.filter((_, i) => i % 3 === 0))(
    'when the $name file is converted with signerKid ed448-archive, then Ed448 verifies the EdDSA JWS over the original bytes',
    async ({ file }) => {
      const r = await convert(app, actor.user, file(), { signerKid: 'ed448-archive' });
      expect(r.status).toBe(200);
      const jws = r.json<Jws>();
      expect(protectedOf(jws).alg).toBe('EdDSA');
      verifyEd448(jws, data, 'ed448-archive.crt');
    },
  );

  it('when an unbound RSA-PSS key signs, then the JWS is PS256, its default', async () => {
    const r = await convert(app, actor.user, bc('bc-ecdsa-sha3-512'), { signerKid: 'pss-any' });
    expect(r.status).toBe(200);
    expect(await verifyJose(r.json<Jws>(), data, rsaPublicOf('pss-any'))).toBe('PS256');
  });

  it("when the signer's own RSA-PSS and Ed448 keys are in the tenant, then `{}` re-signs with each, PS384 and EdDSA", async () => {
    const byPss = opensslSign('pss-archive', ['-md', 'sha384', '-keyopt', 'rsa_padding_mode:pss']);
    const a = await convert(app, actor.user, byPss, {});
    expect(a.status).toBe(200);
    expect(await verifyJose(a.json<Jws>(), data, rsaPublicOf('pss-archive'))).toBe('PS384');
    runBcSigned(ssl, ['ed448-archive.key,ed448-archive.crt,data.bin,own-ed448.der,Ed448']);
    const b = await convert(app, actor.user, ssl.read('own-ed448.der'), {});
    expect(b.status).toBe(200);
    verifyEd448(b.json<Jws>(), data, 'ed448-archive.crt');
  });

  it.each([
    'bc-ed448-noattr',
    'bc-ed448',
    'bc-rsa-sha3-512-noattr',
    'bc-ecdsa-sha3-384-noattr',
    'bc-pss-sha3-384-noattr',
    'bc-ecdsa-sha3-256',
  ])('when the content of %s is altered by one bit, then cms-signature-invalid', async (name) => {
    const file = bc(name);
    const at = file.indexOf(data.subarray(100, 132));
    file[at] ^= 0x01;
    const r = await convert(app, actor.user, file, { signerKid: 'pss-archive' });
    expect(r.status).toBe(422);
    expect(r.json().type).toMatch(/\/problems\/cms-signature-invalid$/);
  });

  it('when an Ed448 signature without signed attributes covers more than the service holds, then cms-eddsa-content-too-large', async () => {
    const r = await convert(app, actor.user, bc('bc-ed448-noattr-big'), {
      signerKid: 'pss-archive',
    });
    expect(r.status).toBe(422);
    expect(r.json().type).toMatch(/\/problems\/cms-eddsa-content-too-large$/);
  });
});

describe('analyze', () => {
  it('when Ed448, SHA-3 and id-RSASSA-PSS files are analysed with an RSA-PSS archive key, then each is convertible; a PSS salt out of bounds is not, with the reason', async () => {
    const patch = await fetch(
      `${app.url}/api/v3/admin/tenants/${actor.tenant.tenantId}/keys/pss-archive`,
      {
        method: 'PATCH',
        headers: { authorization: `Bearer ${actor.user}`, 'content-type': 'application/json' },
        body: JSON.stringify({ archiveSigning: true }),
      },
    );
    expect(patch.status).toBe(200);
    for (const file of [
      bc('bc-ed448'),
      bc('bc-ed448-noattr'),
      bc('bc-ecdsa-sha3-512'),
      opensslSign('pss-signer', ['-md', 'sha512', '-keyopt', 'rsa_padding_mode:pss']),
    ]) {
      const r = await postRaw(app, ANALYZE, actor.user, file, 'application/pkcs7-mime');
      expect(r.status).toBe(200);
      expect(r.json()).toMatchObject({
        convertible: true,
        signing: { path: 'archive-key', kids: ['pss-archive'] },
      });
    }
    const bad = withSigner(pythonPss('rsa-signer', 'SHA256', 'digest'), (sd) =>
      pssParams(sd, (p) => (p.saltLength = 1_000_000)),
    );
    const r = await postRaw(app, ANALYZE, actor.user, bad, 'application/pkcs7-mime');
    expect(r.json()).toMatchObject({
      convertible: false,
      reason: expect.stringContaining('RSASSA-PSS with a salt length of 1000000 bytes'),
    });
  });
});

describe('algorithm parameters out of bounds', () => {
  const pss = () => pythonPss('rsa-signer', 'SHA256', 'digest');
  it.each([
    {
      name: 'a PSS salt length of 1,000,000 bytes',
      file: () => withSigner(pss(), (sd) => pssParams(sd, (p) => (p.saltLength = 1_000_000))),
      detail: 'RSASSA-PSS with a salt length of 1000000 bytes',
    },
    {
      name: 'an unknown mask generation function',
      file: () =>
        withSigner(pss(), (sd) =>
          pssParams(sd, (p) => (p.maskGenAlgorithm.algorithm = '1.3.6.1.4.1.55555.1')),
        ),
      detail: 'RSASSA-PSS with mask generation function 1.3.6.1.4.1.55555.1',
    },
    {
      name: 'MGF1 over another hash than the signature',
      file: () =>
        withSigner(pss(), (sd) =>
          pssParams(sd, (p) => (p.hashAlgorithm.algorithm = '2.16.840.1.101.3.4.2.3')),
        ),
      detail: 'RSASSA-PSS with MGF1 over sha256 and hash sha512',
    },
    {
      name: 'SHAKE256 at 256 bits for Ed448',
      file: () =>
        withSigner(bc('bc-ed448'), (sd) => {
          sd.signerInfos[0].digestAlgorithm.parameters = new Uint8Array([
            0x02, 0x02, 0x01, 0x00,
          ]).buffer;
        }),
      detail: 'SHAKE256 with an output length other than 512 bits',
    },
  ])('when the SignedData has $name, then cms-unsupported names it', async ({ file, detail }) => {
    const r = await convert(app, actor.user, file(), { signerKid: 'pss-archive' });
    expect(r.status).toBe(415);
    expect(r.json()).toMatchObject({
      type: expect.stringMatching(/\/problems\/cms-unsupported$/),
      detail: expect.stringContaining(detail),
    });
  });
});
