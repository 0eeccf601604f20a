import { generateKeyPairSync } from 'node:crypto';
import { createLocalJWKSet, importSPKI } from 'jose';
import { createSecretKey, flattenedVerify, importJWK } from './jose-helpers.ts';
import { startTestApp, type TestApp } from '../../../support/app.ts';
import { TEST_ENGINE } from '../../../support/database.ts';
import {
  api,
  makeTenant,
  userToken,
  workloadToken,
  type TestTenant,
} from '../../../support/auth.ts';
import { RESIGN, postParts, type Jws } from '../migration/helpers.ts';

const RUNTIME = [
  'crypto.keys.read',
  'crypto.encrypt',
  'crypto.sign',
  'crypto.verify',
  'crypto.stream.resign',
  'audit.events.read',
];
const ADMIN = [
  'admin.keys.create',
  'admin.keys.rotate',
  'admin.keys.read',
  'admin.keys.revoke',
  'admin.keys.import',
  'admin.keys.export-public',
  'admin.cryptographicexchange.create',
];
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'k', 'priv', 'oth'];
const b64 = (s: string) => Buffer.from(s).toString('base64');
const data = b64('attack at dawn');

interface PublicVersion {
  version: number;
  jwk: Record<string, string>;
  pem: string | null;
}

describe(`HMAC keys, MAC operations and per-version public keys (${TEST_ENGINE})`, () => {
  let app: TestApp;
  let t: TestTenant;
  let core: string;
  let admin: string;
  const keys = (rest: string) => `/api/v3/admin/tenants/${t.tenantId}/keys${rest}`;
  const create = async (kid: string, type: string, usage?: string) => {
    const r = await api(app, 'POST', keys(''), admin, { kid, type, ...(usage ? { usage } : {}) });
    if (r.status !== 201) throw new Error(`key ${kid}: ${JSON.stringify(r.body)}`);
    return r.body;
  };
  const mac = (body: unknown) => api(app, 'POST', '/api/v3/crypto/generate-mac', core, body);
  const verifyMac = (body: unknown) => api(app, 'POST', '/api/v3/crypto/verify-mac', core, body);
  /** A JWS signing input (RFC 7515 section 5.1) whose MAC or signature the service computes over the raw bytes. */
  const signingInput = (header: Record<string, unknown>, payload: string) => {
    const protectedB64 = Buffer.from(JSON.stringify(header)).toString('base64url');
    const payloadB64 = Buffer.from(payload).toString('base64url');
    return {
      protectedB64,
      payloadB64,
      input: Buffer.from(`${protectedB64}.${payloadB64}`).toString('base64'),
    };
  };

  beforeAll(async () => {
    app = await startTestApp();
    t = await makeTenant(app, [...RUNTIME, ...ADMIN]);
    core = await workloadToken(app, t);
    admin = await userToken(app, t);
    for (const [kid, type, usage] of [
      ['h256', 'hmac-sha256'],
      ['h384', 'hmac-sha384'],
      ['h512', 'hmac-sha512'],
      ['aes', 'aes-256'],
      ['ec', 'ec-p256', 'sign'],
      ['rsa', 'rsa-2048', 'sign'],
      ['ed', 'ed25519'],
      ['dsa', 'ml-dsa-44'],
      ['xwing', 'x25519-ml-kem-768'],
    ] as const) {
      await create(kid, type, usage);
    }
  });
  afterAll(async () => {
    await app.stop();
  });

  describe('HMAC keys', () => {
    it.each([
      ['h256', 'HS256', 32],
      ['h384', 'HS384', 48],
      ['h512', 'HS512', 64],
    ])(
      'when %s computes a MAC over a JWS signing input, then it is the full-length %s and jose verifies it with the key',
      async (kid, alg, bytes) => {
        const { protectedB64, payloadB64, input } = signingInput({ alg }, 'attack at dawn');
        const r = await mac({ kid, data: input });
        expect(r.status).toBe(200);
        expect(r.body).toEqual({ kid, version: 1, algorithm: alg, mac: expect.any(String) });
        const tag = Buffer.from(r.body.mac as string, 'base64');
        expect(tag.length).toBe(bytes);
        // The secret leaves the service only here, read from the test's own process cache, to check the MAC independently.
        const secret = createSecretKey(
          (await app.ctx.keys.get(t.tenantId, kid)).versions.get(1)!.secretKey!.export(),
        );
        expect(secret.symmetricKeySize).toBe(bytes);
        await expect(
          flattenedVerify(
            { protected: protectedB64, payload: payloadB64, signature: tag.toString('base64url') },
            secret,
          ),
        ).resolves.toBeTruthy();
        expect((await verifyMac({ kid, data: input, mac: r.body.mac })).body).toEqual({
          kid,
          version: 1,
          valid: true,
        });
      },
    );

    it('when an HMAC key is created and read, then its views show type and usage mac and never the secret', async () => {
      const created = await create('h-view', 'hmac-sha256');
      expect(created).toMatchObject({
        kid: 'h-view',
        type: 'hmac-sha256',
        usage: 'mac',
        state: 'active',
        currentVersion: 1,
      });
      expect(created.publicKey).toBeUndefined();
      const secret = (await app.ctx.keys.get(t.tenantId, 'h-view')).versions
        .get(1)!
        .secretKey!.export();
      const views = JSON.stringify([
        created,
        (await api(app, 'GET', keys('/h-view'), admin)).body,
        (await api(app, 'GET', keys(''), admin)).body,
        (await api(app, 'GET', '/api/v3/crypto/keys', core)).body,
      ]);
      for (const form of ['base64', 'base64url', 'hex'] as const)
        expect(views).not.toContain(secret.toString(form).replace(/=+$/, ''));
    });

    it('when an HMAC key is rotated, then new MACs are version 2 and a version 1 MAC still verifies as version 1', async () => {
      await create('h-rot', 'hmac-sha512');
      const old = await mac({ kid: 'h-rot', data });
      expect((await api(app, 'POST', keys('/h-rot/rotate'), admin)).body).toMatchObject({
        currentVersion: 2,
      });
      const fresh = await mac({ kid: 'h-rot', data });
      expect(fresh.body).toMatchObject({ version: 2, algorithm: 'HS512' });
      expect(fresh.body.mac).not.toBe(old.body.mac);
      expect((await verifyMac({ kid: 'h-rot', data, mac: old.body.mac })).body).toEqual({
        kid: 'h-rot',
        version: 1,
        valid: true,
      });
      expect((await verifyMac({ kid: 'h-rot', data, mac: fresh.body.mac })).body).toEqual({
        kid: 'h-rot',
        version: 2,
        valid: true,
      });
      expect((await verifyMac({ kid: 'h-rot', data, mac: old.body.mac, version: 2 })).body).toEqual(
        { kid: 'h-rot', valid: false },
      );
    });

    it('when the data or the MAC differs by one bit, then verify-mac answers valid false, not a problem', async () => {
      const m = Buffer.from((await mac({ kid: 'h256', data })).body.mac as string, 'base64');
      const flipped = Buffer.from(m);
      flipped[31] ^= 1;
      expect(
        (await verifyMac({ kid: 'h256', data, mac: flipped.toString('base64') })).body,
      ).toEqual({ kid: 'h256', valid: false });
      expect(
        (await verifyMac({ kid: 'h256', data: b64('attack at dusk'), mac: m.toString('base64') }))
          .body,
      ).toEqual({ kid: 'h256', valid: false });
    });

    it('when the MAC is truncated or too long, then 400 validation-failed naming mac, never valid false', async () => {
      const m = Buffer.from((await mac({ kid: 'h256', data })).body.mac as string, 'base64');
      for (const wrong of [
        m.subarray(0, 16),
        m.subarray(0, 31),
        Buffer.concat([m, Buffer.alloc(1)]),
        Buffer.alloc(0),
      ]) {
        const r = await verifyMac({ kid: 'h256', data, mac: wrong.toString('base64') });
        expect(r.status).toBe(400);
        expect(r.body).toMatchObject({
          type: `${app.config.publicBaseUrl}/problems/validation-failed`,
          detail: expect.stringContaining('mac must be 32 bytes'),
        });
      }
    });

    it('when versions below minDecryptionVersion exist, then verify-mac no longer accepts their MACs and naming one is key-version-retired', async () => {
      await create('h-min', 'hmac-sha256');
      const v1 = (await mac({ kid: 'h-min', data })).body.mac;
      await api(app, 'POST', keys('/h-min/rotate'), admin);
      const row = await app.ctx
        .db('keys')
        .where({ tenant_id: t.tenantId, kid: 'h-min' })
        .first('id');
      await app.ctx.db('keys').where({ id: row.id }).update({ min_decryption_version: 2 });
      await app.ctx.keys.invalidate(t.tenantId, 'h-min');
      expect((await verifyMac({ kid: 'h-min', data, mac: v1 })).body).toEqual({
        kid: 'h-min',
        valid: false,
      });
      const named = await verifyMac({ kid: 'h-min', data, mac: v1, version: 1 });
      expect(named.status).toBe(409);
      expect(named.body.type).toBe(`${app.config.publicBaseUrl}/problems/key-version-retired`);
    });

    it('when a key of another usage is used for MACs, or an HMAC key to sign or encrypt, then 422 key-usage-mismatch', async () => {
      for (const [path, body] of [
        ['generate-mac', { kid: 'aes', data }],
        ['generate-mac', { kid: 'ec', data }],
        ['verify-mac', { kid: 'ec', data, mac: b64('x'.repeat(32)) }],
        ['sign', { kid: 'h256', data }],
        ['encrypt', { kid: 'h256', data }],
      ] as const) {
        const r = await api(app, 'POST', `/api/v3/crypto/${path}`, core, body);
        expect([path, r.status, r.body.type]).toEqual([
          path,
          422,
          `${app.config.publicBaseUrl}/problems/key-usage-mismatch`,
        ]);
      }
    });

    it('when an HMAC key is created with another usage or an AES key with usage mac, then 422 and no key is stored', async () => {
      for (const body of [
        { kid: 'h-enc', type: 'hmac-sha256', usage: 'encrypt' },
        { kid: 'aes-mac', type: 'aes-256', usage: 'mac' },
      ]) {
        const r = await api(app, 'POST', keys(''), admin, body);
        expect(r.status).toBe(422);
        expect((await api(app, 'GET', keys(`/${body.kid}`), admin)).status).toBe(404);
      }
    });

    it('when a keystore is imported with usage mac, then 422 key-usage-mismatch and nothing is stored (HMAC keys are generated)', async () => {
      const pem = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({
        type: 'pkcs8',
        format: 'pem',
      }) as string;
      const before = await app.ctx
        .db('keys')
        .where({ tenant_id: t.tenantId })
        .count({ n: '*' })
        .first();
      const form = new FormData();
      form.append('keystore', new Blob([pem]), 'key.pem');
      form.append('usage', 'mac');
      const res = await fetch(`${app.url}${keys('/import-keystore')}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${admin}` },
        body: form,
      });
      expect(res.status).toBe(422);
      expect(((await res.json()) as { type: string }).type).toBe(
        `${app.config.publicBaseUrl}/problems/key-usage-mismatch`,
      );
      expect(
        await app.ctx.db('keys').where({ tenant_id: t.tenantId }).count({ n: '*' }).first(),
      ).toEqual(before);
    });

    it('when an HMAC key is offered to another tenant in mode public, then 422 key-usage-mismatch, since only its secret exists (the exchange read it as a key pair)', async () => {
      const other = await makeTenant(app, []);
      const r = await api(
        app,
        'POST',
        `/api/v3/admin/tenants/${t.tenantId}/cryptographic-exchanges`,
        admin,
        { kid: 'h256', toTenantId: other.tenantId, mode: 'public' },
      );
      expect(r.status).toBe(422);
      expect(r.body).toMatchObject({
        type: `${app.config.publicBaseUrl}/problems/key-usage-mismatch`,
        detail: expect.stringContaining('offer it in mode wrapped'),
      });
    });

    it('when MAC requests carry an unknown member, then 400 naming it (a caller must not believe it is bound)', async () => {
      for (const [path, body] of [
        ['generate-mac', { kid: 'h256', data, context: { a: 'b' } }],
        ['verify-mac', { kid: 'h256', data, mac: data, algorithm: 'HS256' }],
      ] as const) {
        const r = await api(app, 'POST', `/api/v3/crypto/${path}`, core, body);
        expect(r.status).toBe(400);
        expect(r.body.detail).toMatch(/unknown member (context|algorithm)/);
      }
    });

    it('when MACs are computed and verified in batch, then each item answers on its own and the audit log tallies both operations', async () => {
      const g = await mac({
        items: [
          { kid: 'h256', data },
          { kid: 'missing', data },
          { kid: 'h384', data },
        ],
      });
      expect(g.status).toBe(200);
      const results = g.body.results as Array<Record<string, unknown>>;
      expect(results.map((r) => r.status)).toEqual([200, 404, 200]);
      const v = await verifyMac({
        items: [
          { kid: 'h256', data, mac: results[0].mac },
          { kid: 'h384', data, mac: results[2].mac, version: 1 },
          { kid: 'h256', data, mac: 'AAAA' },
        ],
      });
      expect(
        (v.body.results as Array<Record<string, unknown>>).map((r) => [r.status, r.valid]),
      ).toEqual([
        [200, true],
        [200, true],
        [400, undefined],
      ]);
      await app.ctx.audit.flush();
      for (const action of ['crypto.generate-mac', 'crypto.verify-mac']) {
        const events = await api(app, 'GET', `/api/v3/audit/events?action=${action}`, core);
        expect([action, (events.body.items as unknown[]).length > 0]).toEqual([action, true]);
      }
    });
  });

  describe('public keys per version', () => {
    const publicKeys = (kid: string) => api(app, 'GET', `/api/v3/crypto/keys/${kid}`, core);

    it('when an EC key signs with version 1, is rotated and signs with version 2, then jose verifies each signature with the JWK its kid#version names', async () => {
      await create('ec-rot', 'ec-p256', 'sign');
      const jws = async (version: number) => {
        const { protectedB64, payloadB64, input } = signingInput(
          { alg: 'ES256', kid: `ec-rot#${version}` },
          `signed by version ${version}`,
        );
        const s = await api(app, 'POST', '/api/v3/crypto/sign', core, {
          kid: 'ec-rot',
          data: input,
        });
        expect(s.body.version).toBe(version);
        return {
          protected: protectedB64,
          payload: payloadB64,
          signature: Buffer.from(s.body.signature as string, 'base64').toString('base64url'),
        };
      };
      const first = await jws(1);
      await api(app, 'POST', keys('/ec-rot/rotate'), admin);
      const second = await jws(2);

      const r = await publicKeys('ec-rot');
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({
        kid: 'ec-rot',
        type: 'ec-p256',
        usage: 'sign',
        currentVersion: 2,
      });
      const versions = r.body.versions as PublicVersion[];
      expect(versions.map((v) => [v.version, v.jwk.kid, v.jwk.alg, v.jwk.use])).toEqual([
        [1, 'ec-rot#1', 'ES256', 'sig'],
        [2, 'ec-rot#2', 'ES256', 'sig'],
      ]);
      // The key set picks the key by the header's kid, as any JOSE verifier does.
      const set = createLocalJWKSet({ keys: versions.map((v) => v.jwk) });
      await expect(flattenedVerify(first, set)).resolves.toMatchObject({
        protectedHeader: { kid: 'ec-rot#1' },
      });
      await expect(flattenedVerify(second, set)).resolves.toMatchObject({
        protectedHeader: { kid: 'ec-rot#2' },
      });
      // And each signature fails under the other version's key.
      await expect(
        flattenedVerify(first, await importJWK(versions[1].jwk, 'ES256')),
      ).rejects.toThrow();
      await expect(
        flattenedVerify(second, await importJWK(versions[0].jwk, 'ES256')),
      ).rejects.toThrow();
      // The PEM is the same key as the JWK.
      await expect(
        flattenedVerify(first, await importSPKI(versions[0].pem!, 'ES256')),
      ).resolves.toBeTruthy();
      // The admin key record shows the current version's JWK under the same name.
      expect((await api(app, 'GET', keys('/ec-rot'), admin)).body.publicKey).toEqual(
        versions[1].jwk,
      );
    });

    it('when a detached JWS names <kid>#1 and its key has been rotated since, then resign verifies it with version 1 and names the target version it signs with', async () => {
      await create('ec-old', 'ec-p256', 'sign');
      const content = Buffer.from('a release tarball, signed before the rotation');
      const protectedB64 = Buffer.from(
        JSON.stringify({ alg: 'ES256', kid: 'ec-old#1', b64: false, crit: ['b64'] }),
      ).toString('base64url');
      // RFC 7797: with b64 false the signing input is ASCII(protected) '.' content.
      const s = await api(app, 'POST', '/api/v3/crypto/sign', core, {
        kid: 'ec-old',
        data: Buffer.concat([Buffer.from(`${protectedB64}.`), content]).toString('base64'),
      });
      const old: Jws = {
        protected: protectedB64,
        signature: Buffer.from(s.body.signature as string, 'base64').toString('base64url'),
      };
      await api(app, 'POST', keys('/ec-old/rotate'), admin);
      const r = await postParts(app, `${RESIGN}?kid=ed`, core, [
        ['signature', JSON.stringify(old)],
        ['file', { data: content }],
      ]);
      expect(r.status).toBe(200);
      const fresh = r.json<Jws>();
      const jwks = createLocalJWKSet({
        keys: ((await publicKeys('ed')).body.versions as PublicVersion[]).map((v) => v.jwk),
      });
      await expect(flattenedVerify({ ...fresh, payload: content }, jwks)).resolves.toMatchObject({
        protectedHeader: { alg: 'EdDSA', kid: 'ed#1' },
      });

      // Once version 1 is below the minimum decryption version, it verifies nothing any more.
      await app.ctx
        .db('keys')
        .where({ tenant_id: t.tenantId, kid: 'ec-old' })
        .update({ min_decryption_version: 2 });
      await app.ctx.keys.invalidate(t.tenantId, 'ec-old');
      const retired = await postParts(app, `${RESIGN}?kid=ed`, core, [
        ['signature', JSON.stringify(old)],
        ['file', { data: content }],
      ]);
      expect(retired.status).toBe(409);
      expect(retired.json<{ type: string }>().type).toBe(
        `${app.config.publicBaseUrl}/problems/key-version-retired`,
      );
    });

    it.each(['rsa', 'ec', 'ed', 'dsa', 'xwing'])(
      'when the public keys of %s are read on either route, then no private or secret member appears',
      async (kid) => {
        for (const r of [
          await publicKeys(kid),
          await api(app, 'GET', keys(`/${kid}/public`), admin),
        ]) {
          expect(r.status).toBe(200);
          const versions = r.body.versions as PublicVersion[];
          expect(versions).toHaveLength(1);
          expect(versions[0].jwk.kid).toBe(`${kid}#1`);
          for (const m of PRIVATE_MEMBERS)
            expect([kid, m, m in versions[0].jwk]).toEqual([kid, m, false]);
          expect(JSON.stringify(r.body)).not.toMatch(/PRIVATE KEY/);
          if (kid !== 'xwing') expect(versions[0].pem).toMatch(/^-----BEGIN PUBLIC KEY-----\n/);
        }
      },
    );

    it('when the key is symmetric (AES or HMAC), then both routes answer 422 key-usage-mismatch', async () => {
      for (const kid of ['aes', 'h256']) {
        for (const r of [
          await publicKeys(kid),
          await api(app, 'GET', keys(`/${kid}/public`), admin),
        ]) {
          expect([kid, r.status, r.body.type]).toEqual([
            kid,
            422,
            `${app.config.publicBaseUrl}/problems/key-usage-mismatch`,
          ]);
        }
      }
    });

    it('when the key is revoked, then the Core API answers key-revoked while the admin view still shows it; an unknown kid is key-not-found', async () => {
      await create('ed-rev', 'ed25519');
      await api(app, 'POST', keys('/ed-rev/revoke'), admin);
      expect((await publicKeys('ed-rev')).body).toMatchObject({
        status: 409,
        type: `${app.config.publicBaseUrl}/problems/key-revoked`,
      });
      expect((await api(app, 'GET', keys('/ed-rev/public'), admin)).body).toMatchObject({
        state: 'revoked',
        versions: [{ version: 1 }],
      });
      expect((await publicKeys('nope')).status).toBe(404);
      expect((await api(app, 'GET', keys('/nope/public'), admin)).status).toBe(404);
    });

    it('when another tenant asks, then 403 on the admin path and key-not-found on the Core path; without the permission, 403', async () => {
      const other = await makeTenant(app, ['admin.keys.export-public', 'crypto.keys.read']);
      expect((await api(app, 'GET', keys('/ec/public'), await userToken(app, other))).status).toBe(
        403,
      );
      // The Core route reads the token's tenant only, where no such kid exists.
      expect(
        (await api(app, 'GET', '/api/v3/crypto/keys/ec', await workloadToken(app, other))).status,
      ).toBe(404);
      const lacking = await makeTenant(app, ['crypto.encrypt']);
      expect(
        (await api(app, 'GET', '/api/v3/crypto/keys/ec', await workloadToken(app, lacking))).status,
      ).toBe(403);
    });
  });
});
