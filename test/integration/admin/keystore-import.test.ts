import { jest } from '@jest/globals';
import { X509Certificate, verify } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { CompactEncrypt, calculateJwkThumbprint, compactVerify, importJWK, importX509 } from 'jose';
import type { JWK } from 'jose';
import { AsnConvert } from '@peculiar/asn1-schema';
import { Certificate, SubjectKeyIdentifier, id_ce_subjectKeyIdentifier } from '@peculiar/asn1-x509';
import { startTestApp, type TestApp } from '../../../support/app.ts';
import { TEST_ENGINE } from '../../../support/database.ts';
import {
  api,
  makeTenant,
  userToken,
  workloadToken,
  type TestTenant,
} from '../../../support/auth.ts';
import { openCompact } from '../../support/independent-hpke.ts';
import { fixtureDir, type FixtureDir } from '../../unit/keystore/fixtures.ts';
import { signMessage } from '../../../shared/crypto/sign.ts';
import { decryptCompact } from '../../../shared/jose/compact-jwe.ts';
import { tenantKeyResolver } from '../../../shared/keys/cms-resolver.ts';

const P12_PASSWORD = 'p12 pass phrase';
const PEM_PASSWORD = 'pem pass phrase';

type Upload = { keystore: Buffer; password?: string; kid?: string; usage?: string };
interface Imported {
  kid: string;
  type: string;
  usage: string;
  certificate: {
    subject: string;
    issuer: string;
    serialNumber: string;
    notBefore: string;
    notAfter: string;
  };
}

describe(`keystore import (${TEST_ENGINE})`, () => {
  let app: TestApp;
  let fx: FixtureDir;
  let t: TestTenant;
  let token: string;
  let url: string;
  const files: Record<string, Buffer> = {};

  const upload = async (u: Upload, path = url, bearer = token) => {
    const form = new FormData();
    form.append('keystore', new Blob([u.keystore]), 'keystore.bin');
    for (const f of ['password', 'kid', 'usage'] as const)
      if (u[f] !== undefined) form.append(f, u[f]!);
    const res = await fetch(`${app.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${bearer}` },
      body: form,
    });
    return {
      status: res.status,
      body: (await res.json()) as Record<string, unknown> & { keys: Imported[] },
    };
  };
  const keyCount = async () =>
    Number(
      (await app.ctx.db('keys').where({ tenant_id: t.tenantId }).count({ n: '*' }).first())!.n,
    );
  const cert = (name: string) => new X509Certificate(files[`${name}.crt`]);

  beforeAll(async () => {
    fx = fixtureDir();
    const rsaArgs = ['-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048'];
    const ecArgs = ['-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-384'];
    // One key pair per import that must succeed: the same certificate again for the same usage is a 409.
    for (const [name, args] of Object.entries({
      rsa: rsaArgs,
      ec: ecArgs,
      ec2: ecArgs,
      alias: rsaArgs,
    })) {
      fx.openssl('genpkey', ...args, '-out', `${name}.key`);
      fx.openssl(
        'req',
        '-x509',
        '-key',
        `${name}.key`,
        '-subj',
        `/C=DE/O=Keyward Import Test/CN=${name} signer`,
        '-days',
        '30',
        '-out',
        `${name}.crt`,
      );
      files[`${name}.crt`] = fx.read(`${name}.crt`);
    }
    fx.openssl(
      'pkcs12',
      '-export',
      '-inkey',
      'rsa.key',
      '-in',
      'rsa.crt',
      '-out',
      'modern.p12',
      '-passout',
      `pass:${P12_PASSWORD}`,
    );
    fx.openssl(
      'pkcs12',
      '-export',
      '-legacy',
      '-inkey',
      'rsa.key',
      '-in',
      'rsa.crt',
      '-out',
      'legacy.p12',
      '-passout',
      `pass:${P12_PASSWORD}`,
    );
    fx.openssl(
      'pkey',
      '-in',
      'ec2.key',
      '-aes-256-cbc',
      '-passout',
      `pass:${PEM_PASSWORD}`,
      '-out',
      'ec-encrypted.key',
    );
    fx.openssl('x509', '-in', 'rsa.crt', '-outform', 'DER', '-out', 'rsa.der');
    for (const f of ['modern.p12', 'legacy.p12', 'rsa.der']) files[f] = fx.read(f);
    files['plain.pem'] = Buffer.concat([fx.read('ec.key'), fx.read('ec.crt')]);
    files['encrypted.pem'] = Buffer.concat([fx.read('ec-encrypted.key'), fx.read('ec2.crt')]);
    files['alias.pem'] = Buffer.concat([fx.read('alias.key'), fx.read('alias.crt')]);
    app = await startTestApp();
    t = await makeTenant(
      app,
      ['admin.keys.import', 'admin.keys.read', 'admin.policy.overrides.write'],
      'importer',
    );
    token = await userToken(app, t);
    url = `/api/v3/admin/tenants/${t.tenantId}/keys/import-keystore`;
  });
  afterAll(async () => {
    await app?.stop();
    fx?.cleanup();
  });

  it('when the modern and the -legacy PKCS#12 of openssl import, then 201 with the certificate summary and the chain is stored', async () => {
    const modern = await upload({
      keystore: files['modern.p12'],
      password: P12_PASSWORD,
      kid: 'rsa-modern',
      // The certificate restricts nothing, so the key could do both; the same certificate is
      // imported again below for signing, one key per certificate and usage.
      usage: 'encrypt',
    });
    expect(modern.status).toBe(201);
    const c = cert('rsa');
    expect(modern.body.keys).toEqual([
      expect.objectContaining({
        kid: 'rsa-modern',
        type: 'rsa-2048',
        usage: 'encrypt',
        usages: ['encrypt'],
        allowedUsages: ['encrypt', 'sign'],
        certificate: expect.objectContaining({
          subject: expect.stringContaining('CN=rsa signer'),
          serialNumber: c.serialNumber.toUpperCase(),
        }),
      }),
    ]);
    expect(Date.parse(modern.body.keys[0].certificate.notAfter)).toBe(Date.parse(c.validTo));
    const legacy = await upload({
      keystore: files['legacy.p12'],
      password: P12_PASSWORD,
      kid: 'rsa-legacy',
      usage: 'sign',
    });
    expect(legacy.status).toBe(201);
    expect(legacy.body.keys[0]).toMatchObject({
      kid: 'rsa-legacy',
      type: 'rsa-2048',
      usage: 'sign',
    });
    const version = await app.ctx
      .db('key_versions as v')
      .join('keys as k', 'k.id', 'v.key_id')
      .where({ 'k.tenant_id': t.tenantId, 'k.kid': 'rsa-modern' })
      .first('v.certificate_chain');
    expect(version.certificate_chain).toEqual([c.raw.toString('base64')]);
  });

  it('when PEM key and certificate import, plain and with an encrypted key, then 201; the encrypted one needs its password; only the encrypted one is parsed on a pool thread', async () => {
    const run = jest.spyOn(app.ctx.expensive, 'run');
    const poolParses = () =>
      run.mock.calls.filter(([task]) => task === 'parseKeystoreCosted').length;
    const plain = await upload({ keystore: files['plain.pem'], kid: 'ec-plain' });
    expect(plain.status).toBe(201);
    // No key derivation to run: parsed on the event loop, no thread started for it.
    expect(poolParses()).toBe(0);
    expect(plain.body.keys[0]).toMatchObject({
      kid: 'ec-plain',
      type: 'ec-p384',
      usage: 'sign',
      certificate: expect.objectContaining({ subject: expect.stringContaining('CN=ec signer') }),
    });
    const before = await keyCount();
    const missing = await upload({ keystore: files['encrypted.pem'], kid: 'ec-enc' });
    expect([missing.status, missing.body.detail]).toEqual([
      400,
      expect.stringMatching(/encrypted and no password/),
    ]);
    const wrong = await upload({
      keystore: files['encrypted.pem'],
      password: 'nope',
      kid: 'ec-enc',
    });
    expect([wrong.status, wrong.body.detail]).toEqual([400, expect.stringMatching(/password/)]);
    expect(await keyCount()).toBe(before);
    expect(
      (await upload({ keystore: files['encrypted.pem'], password: PEM_PASSWORD, kid: 'ec-enc' }))
        .status,
    ).toBe(201);
    expect(poolParses()).toBe(3);
    run.mockRestore();
  });

  it('when the PKCS#12 password is wrong or its MAC is broken, then 400 saying so and nothing is stored', async () => {
    const before = await keyCount();
    const wrong = await upload({ keystore: files['modern.p12'], password: 'not the password' });
    expect(wrong.status).toBe(400);
    expect(wrong.body.type).toMatch(/\/problems\/keystore-password-invalid$/);
    expect(wrong.body.detail).toMatch(/MAC verification failed: the password is wrong/);
    const tampered = Buffer.from(files['modern.p12']);
    tampered[tampered.length - 30] ^= 0xff;
    const broken = await upload({ keystore: tampered, password: P12_PASSWORD });
    expect(broken.status).toBe(400);
    expect(broken.body.type).toMatch(/\/problems\/keystore-password-invalid$/);
    expect(broken.body.detail).toMatch(/MAC verification failed/);
    expect(await keyCount()).toBe(before);
  });

  it('when the input is truncated, a certificate, or random bytes, then 400 or 415 naming what was found and nothing is stored', async () => {
    const before = await keyCount();
    const truncated = await upload({
      keystore: files['modern.p12'].subarray(0, 300),
      password: P12_PASSWORD,
    });
    expect([truncated.status, truncated.body.detail]).toEqual([
      400,
      expect.stringMatching(/truncated/),
    ]);
    const der = await upload({ keystore: files['rsa.der'], password: P12_PASSWORD });
    expect([der.status, der.body.detail]).toEqual([
      400,
      expect.stringMatching(/X\.509 certificate/),
    ]);
    const noise = await upload({
      keystore: Buffer.from('this is not a keystore at all, just words'),
      password: P12_PASSWORD,
    });
    expect([400, 415]).toContain(noise.status);
    expect(noise.body.detail).toMatch(/neither PKCS#12|not/);
    // A small PEM without a password is parsed on the event loop: its failures answer the same.
    const badPem = await upload({
      keystore: Buffer.from(
        '-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n',
      ),
    });
    expect(badPem.status).toBe(400);
    expect(badPem.body.type).toMatch(/\/problems\/keystore-/);
    const json = await fetch(`${app.url}${url}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(json.status).toBe(415);
    expect(await keyCount()).toBe(before);
  });

  it('when the kid exists or the policy forbids the type, then 409 or 422 and nothing is stored', async () => {
    const before = await keyCount();
    expect(
      (await upload({ keystore: files['modern.p12'], password: P12_PASSWORD, kid: 'rsa-modern' }))
        .status,
    ).toBe(409);
    expect(
      (await upload({ keystore: files['plain.pem'], kid: 'bad kid with spaces' })).status,
    ).toBe(400);
    await fetch(`${app.url}/api/v3/admin/tenants/${t.tenantId}/policies/overrides`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ template: 'strict' }),
    });
    const refused = await upload({
      keystore: files['modern.p12'],
      password: P12_PASSWORD,
      kid: 'rsa-strict',
    });
    expect(refused.status).toBe(422);
    expect(refused.body.type).toMatch(/policy-violation$/);
    await fetch(`${app.url}/api/v3/admin/tenants/${t.tenantId}/policies/overrides`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(await keyCount()).toBe(before);
  });

  it("when an imported key signs, then the certificate's public key verifies it (RSA from -legacy PKCS#12, EC from encrypted PEM)", async () => {
    const data = Buffer.from('migrated signer still signs');
    const rsa = (await app.ctx.keys.get(t.tenantId, 'rsa-legacy')).versions.get(1)!;
    const rs = signMessage(rsa, { data }, 'RS256');
    expect(verify('sha256', data, cert('rsa').publicKey, rs.signature)).toBe(true);
    const ec = (await app.ctx.keys.get(t.tenantId, 'ec-enc')).versions.get(1)!;
    const es = signMessage(ec, { data });
    expect(es.algorithm).toBe('ES384');
    expect(
      verify(
        'sha384',
        data,
        { key: cert('ec2').publicKey, dsaEncoding: 'ieee-p1363' },
        es.signature,
      ),
    ).toBe(true);
  });

  it('when jose encrypts a JWE for the certificate, then the imported RSA key decrypts it', async () => {
    const publicKey = await importX509(files['rsa.crt'].toString('utf8'), 'RSA-OAEP-256');
    const jwe = await new CompactEncrypt(Buffer.from('for the migrated recipient'))
      .setProtectedHeader({ alg: 'RSA-OAEP-256', enc: 'A256GCM', kid: 'rsa-modern', ver: 1 })
      .encrypt(publicKey);
    const cached = await app.ctx.keys.get(t.tenantId, 'rsa-modern');
    expect(decryptCompact(jwe, (_kid, version) => cached.versions.get(version)!).toString()).toBe(
      'for the migrated recipient',
    );
  });

  it('when a CMS identifier names the certificate, then the key is found by issuer and serial number and by subject key identifier', async () => {
    const parsed = AsnConvert.parse(cert('rsa').raw, Certificate);
    const issuer = Buffer.from(AsnConvert.serialize(parsed.tbsCertificate.issuer));
    const serialNumber = Buffer.from(parsed.tbsCertificate.serialNumber);
    const skiExt = parsed.tbsCertificate.extensions!.find(
      (e) => e.extnID === id_ce_subjectKeyIdentifier,
    )!;
    const ski = Buffer.from(AsnConvert.parse(skiExt.extnValue, SubjectKeyIdentifier).buffer);
    const resolver = tenantKeyResolver(app.ctx, t.tenantId, null);
    expect((await resolver.byCmsRef({ issuer, serialNumber }))?.kid).toMatch(
      /^rsa-(modern|legacy)$/,
    );
    expect((await resolver.byCmsRef({ subjectKeyIdentifier: ski }))?.kid).toMatch(
      /^rsa-(modern|legacy)$/,
    );
  });

  it("when the unversioned alias /api/migration/pkcs12 is used, then it imports into the token's tenant; without permission 403, without token 401", async () => {
    const r = await upload(
      { keystore: files['alias.pem'], kid: 'via-alias' },
      '/api/migration/pkcs12',
    );
    expect(r.status).toBe(201);
    expect(r.body.keys[0]).toMatchObject({ kid: 'via-alias', type: 'rsa-2048' });
    expect(
      await app.ctx.db('keys').where({ tenant_id: t.tenantId, kid: 'via-alias' }).first(),
    ).toBeTruthy();
    const migrator = await makeTenant(app, ['migration.keystore.import'], 'migrator');
    const core = await workloadToken(app, migrator);
    expect(
      (
        await upload(
          { keystore: files['plain.pem'], kid: 'core-import' },
          '/api/migration/pkcs12',
          core,
        )
      ).status,
    ).toBe(201);
    expect(
      await app.ctx.db('keys').where({ tenant_id: migrator.tenantId, kid: 'core-import' }).first(),
    ).toBeTruthy();
    const reader = await makeTenant(app, ['admin.keys.read'], 'reader');
    expect(
      (
        await upload(
          { keystore: files['plain.pem'] },
          '/api/migration/pkcs12',
          await userToken(app, reader),
        )
      ).status,
    ).toBe(403);
    expect((await fetch(`${app.url}/api/migration/pkcs12`, { method: 'POST' })).status).toBe(401);
    // Each import is audited by its row, one key.import per stored key, in the tenant it went to.
    await app.ctx.audit.flush();
    const events = await app.ctx
      .db('audit_events')
      .where({ action: 'key.import' })
      .whereIn('target', ['via-alias', 'core-import'])
      .orderBy('id')
      .select('tenant_id', 'actor', 'target', 'outcome');
    expect(events).toEqual([
      {
        tenant_id: t.tenantId,
        actor: expect.stringMatching(/^user:/),
        target: 'via-alias',
        outcome: 'success',
      },
      {
        tenant_id: migrator.tenantId,
        actor: expect.stringMatching(/^workload:/),
        target: 'core-import',
        outcome: 'success',
      },
    ]);
  });

  describe('AKP JWKs of ML-DSA (RFC 9964)', () => {
    const rfc = JSON.parse(
      readFileSync(new URL('../../fixtures/pq/rfc9964-examples.json', import.meta.url), 'utf8'),
    ) as Record<string, { jwk: JWK & { kid: string; priv: string; pub: string }; jws: string }>;
    const json = (o: object) => Buffer.from(JSON.stringify(o));
    const published = async (kid: string) => {
      const res = await fetch(`${app.url}/api/v3/admin/tenants/${t.tenantId}/keys/${kid}`, {
        headers: { authorization: `Bearer ${token}` },
      });
      return ((await res.json()) as { publicKey: JWK }).publicKey;
    };

    it("when RFC 9964's public ML-DSA-44 example key is imported, then it is a verify-only key named by the JWK's kid, published with the RFC's thumbprint, and jose verifies the RFC's example JWS with it", async () => {
      const { priv: _priv, ...pub } = rfc['ML-DSA-44'].jwk;
      const r = await upload({ keystore: json(pub) });
      expect(r.status).toBe(201);
      expect(r.body.keys).toEqual([
        expect.objectContaining({
          kid: pub.kid,
          type: 'ml-dsa-44',
          usage: 'verify',
          certificate: null,
        }),
      ]);
      const jwk = await published(pub.kid);
      expect(jwk).toMatchObject({ kty: 'AKP', alg: 'ML-DSA-44', pub: pub.pub });
      expect(await calculateJwkThumbprint(jwk)).toBe(pub.kid);
      const { payload } = await compactVerify(
        rfc['ML-DSA-44'].jws,
        await importJWK(jwk, 'ML-DSA-44'),
      );
      expect(payload.length).toBeGreaterThan(0);
    });

    it("when RFC 9964's private ML-DSA-65 example key (its seed) is imported to sign, then the key published is the RFC's, by thumbprint; a priv that is not the pub's is refused and nothing is stored", async () => {
      const r = await upload({
        keystore: json(rfc['ML-DSA-65'].jwk),
        kid: 'rfc9964-65',
        usage: 'sign',
      });
      expect(r.status).toBe(201);
      expect(r.body.keys[0]).toMatchObject({ kid: 'rfc9964-65', type: 'ml-dsa-65', usage: 'sign' });
      expect(await calculateJwkThumbprint(await published('rfc9964-65'))).toBe(
        rfc['ML-DSA-65'].jwk.kid,
      );
      const before = await keyCount();
      const other = Buffer.from(rfc['ML-DSA-65'].jwk.pub, 'base64url');
      other[0] ^= 1;
      const mismatched = await upload({
        keystore: json({ ...rfc['ML-DSA-65'].jwk, pub: other.toString('base64url') }),
        kid: 'rfc9964-bad',
      });
      expect([mismatched.status, mismatched.body.type]).toEqual([
        400,
        expect.stringMatching(/\/problems\/keystore-malformed$/),
      ]);
      expect(await keyCount()).toBe(before);
    });
  });

  describe('AKP JWKs of the HPKE suites (draft-ietf-jose-hpke-pq-pqt)', () => {
    type Vector = { alg: string; jwk: JWK & { kid: string; priv: string; pub: string } };
    const vectors = new Map(
      (
        JSON.parse(
          readFileSync(
            new URL('../../fixtures/pq/jose-hpke-pq-pqt-vectors.json', import.meta.url),
            'utf8',
          ),
        ) as Vector[]
      ).map((v) => [v.alg, v.jwk]),
    );
    const json = (o: object) => Buffer.from(JSON.stringify(o));
    const data = Buffer.from('imported recipient').toString('base64');
    let h: TestTenant;
    let hAdmin: string;
    let hCore: string;
    const hUpload = (u: Upload) =>
      upload(u, `/api/v3/admin/tenants/${h.tenantId}/keys/import-keystore`, hAdmin);
    const hKeyCount = async () =>
      Number(
        (await app.ctx.db('keys').where({ tenant_id: h.tenantId }).count({ n: '*' }).first())!.n,
      );
    beforeAll(async () => {
      h = await makeTenant(
        app,
        ['admin.keys.import', 'admin.keys.read', 'crypto.encrypt', 'crypto.decrypt'],
        'hpke-importer',
      );
      hAdmin = await userToken(app, h);
      hCore = await workloadToken(app, h);
    });
    const published = async (kid: string) =>
      (
        (await api(app, 'GET', `/api/v3/admin/tenants/${h.tenantId}/keys/${kid}`, hAdmin)).body as {
          publicKey: JWK;
        }
      ).publicKey;

    it.each([
      ['HPKE-9', 'x25519-ml-kem-768', 'HPKE-9'],
      ['HPKE-12', 'ml-kem-768', 'HPKE-12'],
      ['HPKE-13', 'ml-kem-1024', 'HPKE-13'],
      ['HPKE-9-KE', 'x25519-ml-kem-768', 'HPKE-9'],
      ['HPKE-13-KE', 'ml-kem-1024', 'HPKE-13'],
      ['HPKE-8', 'p256-ml-kem-768', 'HPKE-8'],
      ['HPKE-10', 'p384-ml-kem-1024', 'HPKE-10'],
      ['HPKE-8-KE', 'p256-ml-kem-768', 'HPKE-8'],
    ])(
      "when the draft's private %s example key is imported, then it is a %s key published with the draft's pub (and its kid as thumbprint under the suite's alg), the runtime encrypts to it a JWE the independent reader opens with the draft's priv, and decrypt round-trips",
      async (alg, type, published_alg) => {
        const jwk = vectors.get(alg)!;
        const r = await hUpload({ keystore: json(jwk) });
        expect(r.status).toBe(201);
        expect(r.body.keys).toEqual([
          expect.objectContaining({ kid: jwk.kid, type, usage: 'encrypt', certificate: null }),
        ]);
        const pub = await published(jwk.kid);
        expect(pub).toMatchObject({ kty: 'AKP', alg: published_alg, pub: jwk.pub });
        // The key is published under the suite's Integrated label, so the draft's kid is its
        // thumbprint when the example JWK is of that label too.
        if (alg === published_alg) expect(await calculateJwkThumbprint(pub)).toBe(jwk.kid);
        const enc = await api(app, 'POST', '/api/v3/crypto/encrypt', hCore, { kid: jwk.kid, data });
        expect(enc.status).toBe(200);
        const ciphertext = enc.body.ciphertext as string;
        const header = JSON.parse(Buffer.from(ciphertext.split('.')[0], 'base64url').toString());
        expect(header).toMatchObject({ alg: published_alg, kid: `${jwk.kid}#1` });
        const opened = await openCompact(ciphertext, Buffer.from(jwk.priv, 'base64url'));
        expect(opened.toString('base64')).toBe(data);
        const dec = await api(app, 'POST', '/api/v3/crypto/decrypt', hCore, { ciphertext });
        expect([dec.status, dec.body.data]).toEqual([200, data]);
      },
    );

    it.each(['HPKE-12-KE', 'HPKE-9-KE', 'HPKE-8-KE', 'HPKE-10'])(
      "when the draft's %s example key is imported without priv, then it is an encrypt-only key: the runtime encrypts to it for the draft's priv to open, and decrypt with it is refused",
      async (alg) => {
        const { priv, ...pub } = vectors.get(alg)!;
        const refused = await hUpload({
          keystore: json(pub),
          kid: `${alg}-signing`,
          usage: 'sign',
        });
        expect([refused.status, refused.body.type]).toEqual([
          422,
          expect.stringMatching(/\/problems\/key-usage-mismatch$/),
        ]);
        const r = await hUpload({ keystore: json(pub), kid: `${alg}-public` });
        expect(r.status).toBe(201);
        expect(r.body.keys[0]).toMatchObject({ kid: `${alg}-public`, usage: 'encrypt' });
        expect((await published(`${alg}-public`)).pub).toBe(pub.pub);
        const enc = await api(app, 'POST', '/api/v3/crypto/encrypt', hCore, {
          kid: `${alg}-public`,
          data,
        });
        expect(enc.status).toBe(200);
        const ciphertext = enc.body.ciphertext as string;
        expect(
          (await openCompact(ciphertext, Buffer.from(priv, 'base64url'))).toString('base64'),
        ).toBe(data);
        const dec = await api(app, 'POST', '/api/v3/crypto/decrypt', hCore, { ciphertext });
        expect(dec.status).toBeGreaterThanOrEqual(400);
        expect(dec.status).toBeLessThan(500);
        expect(dec.body.data).toBeUndefined();
      },
    );

    it('when an HPKE AKP JWK has a seed of the wrong length, a pub not its priv, an unknown alg, an alg of another key type or a member an AKP JWK does not have, then each is a 400 keystore-malformed and nothing is stored', async () => {
      const v12 = vectors.get('HPKE-12')!;
      const v9 = vectors.get('HPKE-9')!;
      const flipped = Buffer.from(v12.pub, 'base64url');
      flipped[10] ^= 1;
      const dsa = JSON.parse(
        readFileSync(new URL('../../fixtures/pq/rfc9964-examples.json', import.meta.url), 'utf8'),
      )['ML-DSA-44'].jwk as Record<string, string>;
      const cases: Record<string, object> = {
        'short ML-KEM seed': { ...v12, priv: v12.priv.slice(0, 43) },
        'X-Wing seed of 64 bytes': {
          ...v9,
          priv: Buffer.concat([Buffer.from(v9.priv, 'base64url'), Buffer.alloc(32)]).toString(
            'base64url',
          ),
        },
        'pub of another key': { ...v12, pub: flipped.toString('base64url') },
        'pub of another suite': { ...v9, pub: v12.pub },
        'public key of the wrong length': { kty: 'AKP', alg: 'HPKE-9', pub: v12.pub },
        'unknown alg': { ...v12, alg: 'HPKE-99' },
        'a JWS alg on an HPKE key': { ...v12, alg: 'ES256' },
        'an ML-DSA alg on an HPKE key': { ...v12, alg: 'ML-DSA-44' },
        'an HPKE alg on an ML-DSA key': { ...dsa, alg: 'HPKE-12' },
        'no pub': { kty: 'AKP', alg: 'HPKE-12', priv: v12.priv },
        'a d member': { ...v12, d: v12.priv },
        'a k member': { kty: 'AKP', alg: 'HPKE-12', pub: v12.pub, k: 'AAAA' },
        'padded base64': { ...v12, priv: `${v12.priv}==` },
      };
      const before = await hKeyCount();
      for (const [what, jwk] of Object.entries(cases)) {
        const r = await hUpload({ keystore: json(jwk), kid: 'refused' });
        expect([what, r.status, r.body.type]).toEqual([
          what,
          400,
          expect.stringMatching(/\/problems\/keystore-malformed$/),
        ]);
      }
      // A kty of another key type with an HPKE alg is not an AKP JWK: not read as one.
      const okp = await hUpload({ keystore: json({ ...v12, kty: 'OKP' }), kid: 'refused' });
      expect(okp.status).toBe(400);
      expect(await hKeyCount()).toBe(before);
    });
  });
});
