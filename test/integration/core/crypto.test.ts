import { createPrivateKey, generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { CompactSign } from 'jose';
import {
  compactDecrypt,
  compactVerify,
  flattenedVerify,
  importJWK,
  createSecretKey,
} from './jose-helpers.ts';
import type { JWK } from 'jose';
import { deserializeMaterial } from '../../../shared/crypto/material-codec.ts';
import { openCompact } from '../../support/independent-hpke.ts';
import { startTestApp, type TestApp } from '../../../support/app.ts';
import { TEST_ENGINE } from '../../../support/database.ts';
import {
  api,
  makeTenant,
  userToken,
  workloadToken,
  type TestTenant,
} from '../../../support/auth.ts';

const RUNTIME = [
  'crypto.keys.read',
  'crypto.encrypt',
  'crypto.decrypt',
  'crypto.sign',
  'crypto.verify',
  'pqc.keys.read',
  'pqc.encapsulate',
  'pqc.decapsulate',
  'pqc.sign',
  'pqc.verify',
  'audit.events.read',
  'audit.verify',
];
const ADMIN = [
  'admin.keys.create',
  'admin.keys.import',
  'admin.keys.rotate',
  'admin.keys.suspend',
  'admin.keys.revoke',
  'admin.keys.archive',
  'admin.keys.read',
];
const data = Buffer.from('attack at dawn').toString('base64');

describe(`core API (${TEST_ENGINE})`, () => {
  let app: TestApp;
  let t: TestTenant;
  let core: string;
  let admin: string;
  const keys = (kid: string) => `/api/v3/admin/tenants/${t.tenantId}/keys${kid}`;
  beforeAll(async () => {
    app = await startTestApp();
    t = await makeTenant(app, [...RUNTIME, ...ADMIN]);
    core = await workloadToken(app, t);
    admin = await userToken(app, t);
    for (const [kid, type, usage] of [
      ['aes', 'aes-256', undefined],
      ['aes128', 'aes-128', undefined],
      ['rsa', 'rsa-2048', 'encrypt'],
      ['rsa-sig', 'rsa-2048', 'sign'],
      ['ec', 'ec-p256', 'sign'],
      ['ec-enc', 'ec-p256', 'encrypt'],
      ['ec384', 'ec-p384', 'sign'],
      ['ed', 'ed25519', undefined],
      ['kem', 'ml-kem-768', undefined],
      ['dsa', 'ml-dsa-65', undefined],
      ['xwing', 'x25519-ml-kem-768', undefined],
      ['kem-p256', 'p256-ml-kem-768', undefined],
      ['kem-p384', 'p384-ml-kem-1024', undefined],
    ]) {
      const r = await api(app, 'POST', keys(''), admin, { kid, type, ...(usage ? { usage } : {}) });
      if (r.status !== 201) throw new Error(`key ${kid}: ${JSON.stringify(r.body)}`);
    }
  });
  afterAll(async () => {
    await app.stop();
  });

  const publicJwk = async (kid: string) =>
    (await api(app, 'GET', keys(`/${kid}`), admin)).body.publicKey as Record<string, unknown>;

  it.each(['aes', 'aes128', 'rsa', 'ec-enc'])(
    'when %s encrypts, then decrypt returns the data and the JWE names the version as <kid>#<version>',
    async (kid) => {
      const enc = await api(app, 'POST', '/api/v3/crypto/encrypt', core, { kid, data });
      expect(enc.status).toBe(200);
      expect(enc.body).toMatchObject({
        kid,
        version: 1,
        ciphertext: expect.stringMatching(/^[\w-]+\.[\w-]*\.[\w-]+\.[\w-]+\.[\w-]+$/),
      });
      const header = JSON.parse(
        Buffer.from((enc.body.ciphertext as string).split('.')[0], 'base64url').toString(),
      );
      expect(header).toMatchObject({ kid: `${kid}#1`, ver: 1 });
      const dec = await api(app, 'POST', '/api/v3/crypto/decrypt', core, {
        ciphertext: enc.body.ciphertext,
      });
      expect(dec.body).toEqual({ kid, version: 1, data });
    },
  );

  it('when an AES key encrypts, then jose decrypts the JWE with the same key material (exported for the test from the cache)', async () => {
    const enc = await api(app, 'POST', '/api/v3/crypto/encrypt', core, { kid: 'aes', data });
    const cached = await app.ctx.keys.get(t.tenantId, 'aes');
    const secret = createSecretKey(cached.versions.get(1)!.secretKey!.export());
    const { plaintext } = await compactDecrypt(enc.body.ciphertext as string, secret);
    expect(Buffer.from(plaintext).toString()).toBe('attack at dawn');
  });

  it.each([
    ['rsa-sig', 'RS256'],
    ['ec', 'ES256'],
    ['ed', 'EdDSA'],
    ['ec384', 'ES384'],
  ])(
    'when %s signs data, then jose verifies the signature with the published public key',
    async (kid, alg) => {
      const s = await api(app, 'POST', '/api/v3/crypto/sign', core, { kid, data });
      expect(s.status).toBe(200);
      expect(s.body.algorithm).toBe(alg);
      // A JWS whose payload and protected header are the raw message: verify the raw signature through jose's JWS verify.
      const key = await importJWK(await publicJwk(kid), alg);
      const protectedB64 = Buffer.from(JSON.stringify({ alg })).toString('base64url');
      const resign = await api(app, 'POST', '/api/v3/crypto/sign', core, {
        kid,
        data: Buffer.from(
          `${protectedB64}.${Buffer.from('attack at dawn').toString('base64url')}`,
        ).toString('base64'),
      });
      await expect(
        flattenedVerify(
          {
            protected: protectedB64,
            payload: Buffer.from('attack at dawn').toString('base64url'),
            signature: Buffer.from(resign.body.signature as string, 'base64').toString('base64url'),
          },
          key,
        ),
      ).resolves.toBeTruthy();
      const v = await api(app, 'POST', '/api/v3/crypto/verify', core, {
        kid,
        data,
        signature: s.body.signature,
      });
      expect(v.body).toMatchObject({ kid, valid: true });
      const bad = await api(app, 'POST', '/api/v3/crypto/verify', core, {
        kid,
        data: Buffer.from('attack at dusk').toString('base64'),
        signature: s.body.signature,
      });
      expect(bad.body.valid).toBe(false);
    },
  );

  it('when an RSA key signs a digest (KMS style), then verifying the data with the signature succeeds', async () => {
    const { createHash } = await import('node:crypto');
    const digest = createHash('sha256').update('attack at dawn').digest('base64');
    const s = await api(app, 'POST', '/api/v3/crypto/sign', core, { kid: 'rsa-sig', digest });
    expect(
      (
        await api(app, 'POST', '/api/v3/crypto/verify', core, {
          kid: 'rsa-sig',
          data,
          signature: s.body.signature,
        })
      ).body.valid,
    ).toBe(true);
  });

  it('when a key is rotated, then new ciphertexts use version 2 and version 1 ciphertexts still decrypt', async () => {
    await api(app, 'POST', keys(''), admin, { kid: 'rot', type: 'aes-256' });
    const old = await api(app, 'POST', '/api/v3/crypto/encrypt', core, { kid: 'rot', data });
    await api(app, 'POST', keys('/rot/rotate'), admin);
    const fresh = await api(app, 'POST', '/api/v3/crypto/encrypt', core, { kid: 'rot', data });
    expect(fresh.body.version).toBe(2);
    expect(
      (await api(app, 'POST', '/api/v3/crypto/decrypt', core, { ciphertext: old.body.ciphertext }))
        .body,
    ).toEqual({ kid: 'rot', version: 1, data });
  });

  it('when the kid does not exist, then exactly the key-not-found problem', async () => {
    const r = await api(app, 'POST', '/api/v3/crypto/encrypt', core, { kid: 'nope', data });
    expect(r.status).toBe(404);
    expect(r.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(r.body).toMatchObject({
      type: `${app.config.publicBaseUrl}/problems/key-not-found`,
      title: 'Key Not Found',
      status: 404,
      instance: '/api/v3/crypto/encrypt',
    });
  });

  it('when the kid does not exist, then the problem names the tenant searched (the token’s), on the Core and the Admin paths', async () => {
    const r = await api(app, 'POST', '/api/v3/crypto/encrypt', core, { kid: 'nope', data });
    expect(r.body.detail).toBe(`no key nope in tenant ${t.tenantId}`);
    const shown = await api(app, 'GET', keys('/nope'), admin);
    expect([shown.status, shown.body.detail]).toEqual([404, `no key nope in tenant ${t.tenantId}`]);
  });

  it('when a key is suspended, revoked or archived, then runtime use answers key-suspended or key-revoked', async () => {
    await api(app, 'POST', keys(''), admin, { kid: 'st', type: 'aes-256' });
    const ct = (await api(app, 'POST', '/api/v3/crypto/encrypt', core, { kid: 'st', data })).body
      .ciphertext;
    await api(app, 'POST', keys('/st/suspend'), admin);
    expect(
      (await api(app, 'POST', '/api/v3/crypto/encrypt', core, { kid: 'st', data })).body.type,
    ).toMatch(/key-suspended$/);
    await api(app, 'POST', keys('/st/resume'), admin);
    expect(
      (await api(app, 'POST', '/api/v3/crypto/decrypt', core, { ciphertext: ct })).status,
    ).toBe(200);
    await api(app, 'POST', keys('/st/revoke'), admin);
    const revoked = await api(app, 'POST', '/api/v3/crypto/decrypt', core, { ciphertext: ct });
    expect(revoked.status).toBe(409);
    expect(revoked.body.type).toMatch(/key-revoked$/);
    await api(app, 'POST', keys('/st/archive'), admin);
    expect(
      (await api(app, 'POST', '/api/v3/crypto/encrypt', core, { kid: 'st', data })).body.type,
    ).toMatch(/key-revoked$/);
  });

  it('when a key is used against its usage, then 422; when a ciphertext is tampered, then an opaque decryption-failed', async () => {
    expect((await api(app, 'POST', '/api/v3/crypto/sign', core, { kid: 'aes', data })).status).toBe(
      422,
    );
    expect(
      (await api(app, 'POST', '/api/v3/crypto/encrypt', core, { kid: 'ed', data })).status,
    ).toBe(422);
    const ct = (await api(app, 'POST', '/api/v3/crypto/encrypt', core, { kid: 'aes', data })).body
      .ciphertext as string;
    const parts = ct.split('.');
    parts[3] = Buffer.from('tampered!!').toString('base64url');
    const r = await api(app, 'POST', '/api/v3/crypto/decrypt', core, {
      ciphertext: parts.join('.'),
    });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ title: 'Decryption Failed', detail: 'decryption failed' });
  });

  it('when a batch mixes good and bad items, then each gets its own result', async () => {
    const r = await api(app, 'POST', '/api/v3/crypto/encrypt', core, {
      items: [
        { kid: 'aes', data },
        { kid: 'missing', data },
        { kid: 'ed', data },
        { kid: 'aes', data: '***' },
      ],
    });
    expect(r.status).toBe(200);
    expect((r.body.results as Array<{ status: number }>).map((x) => x.status)).toEqual([
      200, 404, 422, 400,
    ]);
  });

  it('when the JSON body is over 64 KiB, then 413 problem pointing at the stream endpoints', async () => {
    const r = await api(app, 'POST', '/api/v3/crypto/encrypt', core, {
      kid: 'aes',
      data: Buffer.alloc(70_000).toString('base64'),
    });
    expect(r.status).toBe(413);
    expect(r.body.detail).toMatch(/stream/);
  });

  it("when another tenant's token names this tenant's kid, then key-not-found and nothing leaks", async () => {
    const other = await makeTenant(app, RUNTIME);
    const ct = (await api(app, 'POST', '/api/v3/crypto/encrypt', core, { kid: 'aes', data })).body
      .ciphertext;
    const otherCore = await workloadToken(app, other);
    expect(
      (await api(app, 'POST', '/api/v3/crypto/encrypt', otherCore, { kid: 'aes', data })).status,
    ).toBe(404);
    expect(
      (await api(app, 'POST', '/api/v3/crypto/decrypt', otherCore, { ciphertext: ct })).status,
    ).toBe(404);
    expect(
      ((await api(app, 'GET', '/api/v3/crypto/keys', otherCore)).body.items as unknown[]).length,
    ).toBe(0);
  });

  it('when the tenant lists its keys, then metadata only', async () => {
    const r = await api(app, 'GET', '/api/v3/crypto/keys?limit=500', core);
    expect((r.body.items as Array<{ kid: string }>).map((k) => k.kid)).toEqual(
      expect.arrayContaining(['aes', 'rsa', 'ed']),
    );
    expect(JSON.stringify(r.body)).not.toMatch(/"d":|"k":/);
  });

  it('when the tenant lists its post-quantum keys, then only those, as the document describes them (the answer is checked against its row), and a bad limit names the field', async () => {
    const r = await api(app, 'GET', '/api/v3/pqc/keys?limit=500', core);
    expect(r.status).toBe(200);
    const kids = (r.body.items as Array<{ kid: string }>).map((k) => k.kid);
    expect(kids).toEqual(expect.arrayContaining(['kem', 'xwing', 'kem-p256', 'kem-p384', 'dsa']));
    expect(kids).not.toContain('aes');
    const bad = await api(app, 'GET', '/api/v3/pqc/keys?limit=0', core);
    expect([bad.status, bad.body.field]).toEqual([400, 'limit']);
  });

  it('when ML-KEM and the hybrids encapsulate, then decapsulation yields the same shared secret; ML-DSA signs and verifies', async () => {
    for (const kid of ['kem', 'xwing', 'kem-p256', 'kem-p384']) {
      const e = await api(app, 'POST', '/api/v3/pqc/encapsulate', core, { kid });
      expect(e.status).toBe(200);
      const d = await api(app, 'POST', '/api/v3/pqc/decapsulate', core, {
        kid,
        ciphertext: e.body.ciphertext,
      });
      expect(d.body.sharedSecret).toBe(e.body.sharedSecret);
    }
    const s = await api(app, 'POST', '/api/v3/pqc/sign', core, { kid: 'dsa', data });
    expect(s.body.algorithm).toBe('ML-DSA-65');
    expect(
      (
        await api(app, 'POST', '/api/v3/pqc/verify', core, {
          kid: 'dsa',
          data,
          signature: s.body.signature,
        })
      ).body.valid,
    ).toBe(true);
    expect((await api(app, 'POST', '/api/v3/pqc/sign', core, { kid: 'ed', data })).status).toBe(
      422,
    );
  });

  it('when audit events are queried, then runtime operations are there as tallies; when a row is tampered, then verification reports the first broken link', async () => {
    const before = await api(app, 'POST', '/api/v3/audit/verify', core, {});
    expect(before.body).toMatchObject({ valid: true });
    const events = await api(
      app,
      'GET',
      '/api/v3/audit/events?action=crypto.encrypt&limit=1000',
      core,
    );
    const total = (events.body.items as Array<{ details: { count: number } }>).reduce(
      (n, e) => n + e.details.count,
      0,
    );
    expect(total).toBeGreaterThan(5);
    const victim = (events.body.items as Array<{ seq: number }>)[0].seq;
    await app.ctx
      .db('audit_events')
      .where({ tenant_id: t.tenantId, seq: victim })
      .update({ outcome: 'failure' });
    const after = await api(app, 'POST', '/api/v3/audit/verify', core, {});
    expect(after.body).toMatchObject({ valid: false, firstBroken: { seq: victim } });
  });

  /** The HPKE private key (SerializePrivateKey: the seed) of a key's version 1, as its owner holds it. */
  const hpkeSeed = async (kid: string): Promise<Buffer> => {
    const m = deserializeMaterial((await app.ctx.keys.get(t.tenantId, kid)).material.get(1)!);
    if (m.secret) return m.secret;
    const key = createPrivateKey({ key: m.privateKeyDer!, format: 'der', type: 'pkcs8' });
    return key.export({ format: 'raw-seed' } as never) as unknown as Buffer;
  };
  const publishedJwk = async (kid: string) =>
    (
      (await api(app, 'GET', `/api/v3/crypto/keys/${kid}`, core)).body as {
        versions: { jwk: JWK }[];
      }
    ).versions[0].jwk;

  it('when an ML-DSA-65 key signs with output jws, then jose verifies the compact JWS with the public AKP JWK of the GET key endpoint; without output the answer is as before', async () => {
    const s = await api(app, 'POST', '/api/v3/crypto/sign', core, {
      kid: 'dsa',
      data,
      output: 'jws',
    });
    expect(s.status).toBe(200);
    expect(s.body).toMatchObject({ kid: 'dsa', version: 1, algorithm: 'ML-DSA-65' });
    const jwk = await publishedJwk('dsa');
    expect(jwk).toMatchObject({ kty: 'AKP', alg: 'ML-DSA-65' });
    const verified = await compactVerify(s.body.jws as string, await importJWK(jwk, 'ML-DSA-65'), {
      algorithms: ['ML-DSA-65'],
    });
    expect(verified.protectedHeader).toEqual({ alg: 'ML-DSA-65', kid: 'dsa#1' });
    expect(Buffer.from(verified.payload).toString('base64')).toBe(data);
    expect((s.body.jws as string).split('.')[2]).toBe(
      Buffer.from(s.body.signature as string, 'base64').toString('base64url'),
    );
    const plain = await api(app, 'POST', '/api/v3/crypto/sign', core, { kid: 'dsa', data });
    expect(Object.keys(plain.body).sort()).toEqual(['algorithm', 'kid', 'signature', 'version']);
    const digest = await api(app, 'POST', '/api/v3/crypto/sign', core, {
      kid: 'ec',
      digest: Buffer.alloc(32).toString('base64'),
      output: 'jws',
    });
    expect(digest.status).toBe(400);
  });

  it.each([
    ['kem', 'HPKE-12'],
    ['xwing', 'HPKE-9'],
    ['kem-p256', 'HPKE-8'],
    ['kem-p384', 'HPKE-10'],
  ])(
    'when %s encrypts over HTTP, then the answer is a compact %s Integrated Encryption JWE the independent reader opens, decrypt round-trips, and a tampered one is the same decryption-failed as any other',
    async (kid, alg) => {
      const enc = await api(app, 'POST', '/api/v3/crypto/encrypt', core, { kid, data });
      expect(enc.status).toBe(200);
      const ciphertext = enc.body.ciphertext as string;
      const [h, , iv, , tag] = ciphertext.split('.');
      const header = JSON.parse(Buffer.from(h, 'base64url').toString()) as Record<string, unknown>;
      expect(header).toMatchObject({ alg, kid: `${kid}#1` });
      expect(['enc' in header, iv, tag]).toEqual([false, '', '']);
      const opened = await openCompact(ciphertext, await hpkeSeed(kid));
      expect(opened.toString('base64')).toBe(data);
      const dec = await api(app, 'POST', '/api/v3/crypto/decrypt', core, { ciphertext });
      expect([dec.status, dec.body.data]).toEqual([200, data]);

      const parts = ciphertext.split('.');
      const ct = Buffer.from(parts[3], 'base64url');
      ct[0] ^= 1;
      parts[3] = ct.toString('base64url');
      const tampered = await api(app, 'POST', '/api/v3/crypto/decrypt', core, {
        ciphertext: parts.join('.'),
      });
      const aesEnc = await api(app, 'POST', '/api/v3/crypto/encrypt', core, { kid: 'aes', data });
      const aesParts = (aesEnc.body.ciphertext as string).split('.');
      const aesTag = Buffer.from(aesParts[4], 'base64url');
      aesTag[0] ^= 1;
      aesParts[4] = aesTag.toString('base64url');
      const other = await api(app, 'POST', '/api/v3/crypto/decrypt', core, {
        ciphertext: aesParts.join('.'),
      });
      const { instance: _a, ...a } = tampered.body as Record<string, unknown>;
      const { instance: _b, ...b } = other.body as Record<string, unknown>;
      expect([tampered.status, a]).toEqual([other.status, b]);
      expect(tampered.status).toBe(400);
    },
  );

  describe('verify of a compact JWS (jws)', () => {
    /** Imports a JWK through the keystore import, as an operator would; answers the status. */
    const importJwk = async (jwk: object, kid?: string) => {
      const form = new FormData();
      form.append('keystore', new Blob([JSON.stringify(jwk)]), 'key.jwk');
      if (kid) form.append('kid', kid);
      const res = await fetch(`${app.url}${keys('/import-keystore')}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${admin}` },
        body: form,
      });
      return res.status;
    };
    const verifyJws = (kid: string, jws: string, extra: object = {}) =>
      api(app, 'POST', '/api/v3/crypto/verify', core, { kid, jws, ...extra });
    /** The JWS with one byte of part `i` (1 payload, 2 signature) flipped. */
    const flipped = (jws: string, i: number) => {
      const parts = jws.split('.');
      const b = Buffer.from(parts[i], 'base64url');
      b[Math.floor(b.length / 2)] ^= 1;
      parts[i] = b.toString('base64url');
      return parts.join('.');
    };
    const payload = Buffer.from('attack at dawn');

    it("when jose signs a compact JWS with an ML-DSA-65 KeyObject whose public AKP JWK was imported (a verify-only key), then verify with jws answers valid with the header's alg and kid; one flipped byte of payload or signature answers valid: false", async () => {
      const { publicKey, privateKey } = generateKeyPairSync('ml-dsa-65');
      expect(await importJwk(publicKey.export({ format: 'jwk' }), 'outside-dsa')).toBe(201);
      const jws = await new CompactSign(payload)
        .setProtectedHeader({ alg: 'ML-DSA-65', kid: 'outside-dsa' })
        .sign(privateKey);
      const ok = await verifyJws('outside-dsa', jws);
      expect([ok.status, ok.body]).toEqual([
        200,
        {
          kid: 'outside-dsa',
          version: 1,
          valid: true,
          header: { alg: 'ML-DSA-65', kid: 'outside-dsa' },
        },
      ]);
      const bare = await new CompactSign(payload)
        .setProtectedHeader({ alg: 'ML-DSA-65' })
        .sign(privateKey);
      expect((await verifyJws('outside-dsa', bare)).body).toEqual({
        kid: 'outside-dsa',
        version: 1,
        valid: true,
        header: { alg: 'ML-DSA-65' },
      });
      // A flipped header byte is mostly a header that is no JSON (400, below); a header that
      // still parses is covered by the next tests.
      for (const i of [1, 2]) {
        const r = await verifyJws('outside-dsa', flipped(jws, i));
        expect([i, r.status, r.body]).toEqual([i, 200, { kid: 'outside-dsa', valid: false }]);
      }
      // The raw form verifies with the verify-only key as well.
      const [h, p, sig] = jws.split('.');
      const raw = await api(app, 'POST', '/api/v3/crypto/verify', core, {
        kid: 'outside-dsa',
        data: Buffer.from(`${h}.${p}`).toString('base64'),
        signature: Buffer.from(sig, 'base64url').toString('base64'),
      });
      expect(raw.body).toEqual({ kid: 'outside-dsa', version: 1, valid: true });
    });

    it("when RFC 9964's public ML-DSA-44 example key is imported, then the RFC's example JWS verifies through verify with jws, its kid the JWK's thumbprint", async () => {
      const rfc = JSON.parse(
        readFileSync(new URL('../../fixtures/pq/rfc9964-examples.json', import.meta.url), 'utf8'),
      )['ML-DSA-44'] as { jwk: Record<string, string>; jws: string };
      const { priv: _priv, ...pub } = rfc.jwk;
      expect(await importJwk(pub)).toBe(201);
      const r = await verifyJws(pub.kid, rfc.jws);
      expect(r.body).toEqual({
        kid: pub.kid,
        version: 1,
        valid: true,
        header: { alg: 'ML-DSA-44', kid: pub.kid },
      });
    });

    it.each([
      ['dsa', 'ML-DSA-65'],
      ['ec', 'ES256'],
      ['ec384', 'ES384'],
      ['rsa-sig', 'RS256'],
      ['ed', 'EdDSA'],
    ])(
      'when %s signs with output jws, then verify with jws answers valid with %s and the versioned kid, and jose verifies the same JWS with the published key',
      async (kid, alg) => {
        const s = await api(app, 'POST', '/api/v3/crypto/sign', core, {
          kid,
          data,
          output: 'jws',
        });
        const jws = s.body.jws as string;
        const r = await verifyJws(kid, jws);
        expect([r.status, r.body]).toEqual([
          200,
          { kid, version: 1, valid: true, header: { alg, kid: `${kid}#1` } },
        ]);
        const verified = await compactVerify(jws, await importJWK(await publishedJwk(kid), alg));
        expect(Buffer.from(verified.payload).toString('base64')).toBe(data);
        expect((await verifyJws(kid, flipped(jws, 2))).body).toEqual({ kid, valid: false });
      },
    );

    it("when the JWS's alg is not the key's, its kid names another key or another tenant's key, or it has crit, then the answer is word for word that of a wrong signature", async () => {
      const own = (
        await api(app, 'POST', '/api/v3/crypto/sign', core, { kid: 'dsa', data, output: 'jws' })
      ).body.jws as string;
      const wrongSignature = await verifyJws('dsa', flipped(own, 2));
      expect(wrongSignature.body).toEqual({ kid: 'dsa', valid: false });
      const reheader = (header: object) => {
        const [, p, sig] = own.split('.');
        return `${Buffer.from(JSON.stringify(header)).toString('base64url')}.${p}.${sig}`;
      };
      // Another tenant with a key of the same kid and type signs: its JWS is not this key's.
      const t2 = await makeTenant(app, [...RUNTIME, ...ADMIN]);
      const admin2 = await userToken(app, t2);
      const core2 = await workloadToken(app, t2);
      await api(app, 'POST', `/api/v3/admin/tenants/${t2.tenantId}/keys`, admin2, {
        kid: 'dsa',
        type: 'ml-dsa-65',
      });
      const foreign = (
        await api(app, 'POST', '/api/v3/crypto/sign', core2, { kid: 'dsa', data, output: 'jws' })
      ).body.jws as string;
      const ecJws = (
        await api(app, 'POST', '/api/v3/crypto/sign', core, { kid: 'ec', data, output: 'jws' })
      ).body.jws as string;
      const cases: Record<string, string> = {
        'another tenant': foreign,
        'an ES256 JWS of another key': ecJws,
        'alg of another parameter set': reheader({ alg: 'ML-DSA-44', kid: 'dsa#1' }),
        'alg none': reheader({ alg: 'none', kid: 'dsa#1' }),
        'kid of another key': reheader({ alg: 'ML-DSA-65', kid: 'ec#1' }),
        'kid of no retained version': reheader({ alg: 'ML-DSA-65', kid: 'dsa#7' }),
        'kid not a string': reheader({ alg: 'ML-DSA-65', kid: 1 }),
        crit: reheader({ alg: 'ML-DSA-65', kid: 'dsa#1', crit: ['exp'], exp: 1 }),
        'unencoded payload': reheader({ alg: 'ML-DSA-65', kid: 'dsa#1', b64: false }),
      };
      for (const [what, jws] of Object.entries(cases)) {
        const r = await verifyJws('dsa', jws);
        expect([what, r.status, r.body]).toEqual([what, 200, wrongSignature.body]);
      }
    });

    it('when jws is not a compact JWS, or comes with data, digest, signature or algorithm, then 400 validation-failed; without jws a signature is still required', async () => {
      const own = (
        await api(app, 'POST', '/api/v3/crypto/sign', core, { kid: 'dsa', data, output: 'jws' })
      ).body.jws as string;
      const notJson = `${Buffer.from('not json').toString('base64url')}.${own.split('.')[1]}.AA`;
      const noAlg = `${Buffer.from('{"kid":"dsa#1"}').toString('base64url')}.e30.AA`;
      for (const [what, body] of [
        ['two parts', { kid: 'dsa', jws: 'a.b' }],
        ['not base64url', { kid: 'dsa', jws: 'a+b.c.d' }],
        ['header not JSON', { kid: 'dsa', jws: notJson }],
        ['header without alg', { kid: 'dsa', jws: noAlg }],
        ['jws with data', { kid: 'dsa', jws: own, data }],
        ['jws with signature', { kid: 'dsa', jws: own, signature: 'AA==' }],
        ['jws with algorithm', { kid: 'dsa', jws: own, algorithm: 'ML-DSA-65' }],
        ['no signature', { kid: 'dsa', data }],
      ] as const) {
        const r = await api(app, 'POST', '/api/v3/crypto/verify', core, body);
        expect([what, r.status, r.body.type]).toEqual([
          what,
          400,
          expect.stringMatching(/\/problems\/validation-failed$/),
        ]);
      }
    });
  });
});
