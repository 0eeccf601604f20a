import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { CompactEncrypt, compactDecrypt, decodeProtectedHeader } from './jose-helpers.ts';
import { startTestApp, type TestApp } from '../../../support/app.ts';
import { TEST_ENGINE } from '../../../support/database.ts';
import {
  adminToken,
  api,
  makeTenant,
  userToken,
  workloadToken,
  type TestTenant,
} from '../../../support/auth.ts';
import { createRuntimeLane } from '../../../api/runtime-lane.ts';
import { generateDataKey } from '../../../api/services/crypto/data-keys.ts';

const RUNTIME = [
  'crypto.encrypt',
  'crypto.decrypt',
  'crypto.sign',
  'crypto.verify',
  'crypto.generate-data-key',
  'pqc.encapsulate',
  'pqc.decapsulate',
  'pqc.sign',
  'pqc.verify',
  'audit.events.read',
];
const ADMIN = ['admin.keys.create', 'admin.keys.rotate', 'admin.keys.read'];
const data = Buffer.from('attack at dawn').toString('base64');
const CONTEXT = { tenant: 'acme', purpose: 'invoices' };
const C = '/api/v3/crypto';
const header = (jwe: string) => decodeProtectedHeader(jwe) as Record<string, unknown>;

describe(`KMS operations: context, data keys, re-encrypt, random (${TEST_ENGINE})`, () => {
  let app: TestApp;
  let t: TestTenant;
  let core: string;
  let admin: string;
  const keys = (kid: string) => `/api/v3/admin/tenants/${t.tenantId}/keys${kid}`;
  const post = (op: string, body: unknown, token = core) =>
    api(app, 'POST', `${C}/${op}`, token, body);

  beforeAll(async () => {
    app = await startTestApp();
    t = await makeTenant(app, [...RUNTIME, ...ADMIN]);
    core = await workloadToken(app, t);
    admin = await userToken(app, t);
    for (const [kid, type, usage] of [
      ['aes', 'aes-256', undefined],
      ['rsa', 'rsa-2048', 'encrypt'],
      ['ec-enc', 'ec-p256', 'encrypt'],
      ['ed', 'ed25519', undefined],
      ['kem', 'ml-kem-768', undefined],
      ['dsa', 'ml-dsa-44', undefined],
      ['rot', 'aes-256', undefined],
    ]) {
      const r = await api(app, 'POST', keys(''), admin, { kid, type, ...(usage ? { usage } : {}) });
      if (r.status !== 201) throw new Error(`key ${kid}: ${JSON.stringify(r.body)}`);
    }
  });
  afterAll(async () => {
    await app.stop();
  });

  describe('encryption context', () => {
    // AES on the event loop, RSA and P-256 decrypt in the worker pool: both paths must carry the context.
    it.each(['aes', 'rsa', 'ec-enc'])(
      'when %s encrypts with a context, then only the same context decrypts (in any member order), and the header holds a digest, not the values',
      async (kid) => {
        const enc = await post('encrypt', { kid, data, context: CONTEXT });
        expect(enc.status).toBe(200);
        const h = header(enc.body.ciphertext as string);
        expect(h).toMatchObject({
          kid: `${kid}#1`,
          ver: 1,
          ctx: expect.stringMatching(/^[\w-]{43}$/),
        });
        expect(JSON.stringify(h)).not.toMatch(/acme|invoices/);
        const ciphertext = enc.body.ciphertext;
        expect(
          (await post('decrypt', { ciphertext, context: { purpose: 'invoices', tenant: 'acme' } }))
            .body,
        ).toEqual({ kid, version: 1, data });
        for (const context of [
          undefined,
          {},
          { tenant: 'acme', purpose: 'payroll' },
          { tenant: 'acme' },
          { ...CONTEXT, extra: 'x' },
        ]) {
          const r = await post('decrypt', { ciphertext, ...(context ? { context } : {}) });
          expect([context, r.status, r.body.type]).toEqual([
            context,
            400,
            `${app.config.publicBaseUrl}/problems/decryption-failed`,
          ]);
        }
      },
    );

    it('when a ciphertext sealed without a context is decrypted with one, then decryption-failed', async () => {
      const ciphertext = (await post('encrypt', { kid: 'aes', data })).body.ciphertext;
      expect((await post('decrypt', { ciphertext, context: CONTEXT })).body.title).toBe(
        'Decryption Failed',
      );
    });

    it('when the ctx member of a header is swapped for the digest of another context, then the tag fails (the header is the AAD)', async () => {
      const mine = (await post('encrypt', { kid: 'aes', data, context: CONTEXT })).body
        .ciphertext as string;
      const theirs = (await post('encrypt', { kid: 'aes', data, context: { tenant: 'evil' } })).body
        .ciphertext as string;
      const forged = [
        Buffer.from(JSON.stringify({ ...header(mine), ctx: header(theirs).ctx })).toString(
          'base64url',
        ),
        ...mine.split('.').slice(1),
      ].join('.');
      expect(
        (await post('decrypt', { ciphertext: forged, context: { tenant: 'evil' } })).body.title,
      ).toBe('Decryption Failed');
    });

    it.each([
      ['an array', ['a']],
      ['null', null],
      ['a string', 'tenant=acme'],
      ['a number member', { n: 1 }],
      ['a nested object', { a: { b: 'c' } }],
      ['65 members', Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, 'v']))],
      ['16 KiB of values', { big: 'x'.repeat(16_384) }],
    ])(
      'when the context is %s, then 400 validation-failed naming context',
      async (_what, context) => {
        const r = await post('encrypt', { kid: 'aes', data, context });
        expect(r.status).toBe(400);
        expect(r.body).toMatchObject({
          title: 'Validation Failed',
          detail: expect.stringMatching(/^context /),
        });
      },
    );

    it('when the context is 1 MiB, then the body cap answers 413 over HTTP, and the service itself refuses it with 400 whatever the cap', async () => {
      const context = { big: 'x'.repeat(1 << 20) };
      expect(
        (await post('generate-data-key', { kid: 'aes', keySpec: 'AES_256', context })).status,
      ).toBe(413);
      await expect(
        generateDataKey(app.ctx, t.tenantId, { kid: 'aes', keySpec: 'AES_256', context }),
      ).rejects.toMatchObject({ code: 'validation_failed', status: 400 });
    });
  });

  describe('unknown members', () => {
    const refused: Array<[string, Record<string, unknown>]> = [
      ['crypto/encrypt', { kid: 'aes', data, aad: 'x' }],
      ['crypto/decrypt', { ciphertext: 'a.b.c.d.e', encryptionContext: CONTEXT }],
      ['crypto/sign', { kid: 'ed', data, aad: 'x' }],
      ['crypto/verify', { kid: 'ed', data, signature: data, aad: 'x' }],
      ['crypto/generate-data-key', { kid: 'aes', keySpec: 'AES_256', encryptionContext: CONTEXT }],
      ['crypto/generate-data-key-without-plaintext', { kid: 'aes', keySpec: 'AES_256', aad: 'x' }],
      ['crypto/re-encrypt', { ciphertext: 'a.b.c.d.e', aad: 'x' }],
      ['crypto/random', { bytes: 16, aad: 'x' }],
      ['crypto/encrypt', { items: [{ kid: 'aes', data }], aad: 'x' }],
      ['pqc/encapsulate', { kid: 'kem', aad: 'x' }],
      ['pqc/decapsulate', { kid: 'kem', ciphertext: data, aad: 'x' }],
      ['pqc/sign', { kid: 'dsa', data, aad: 'x' }],
      ['pqc/verify', { kid: 'dsa', data, signature: data, aad: 'x' }],
    ];
    it('when aad or encryptionContext is sent to any Core or PQC operation (or the batch wrapper), then 400 naming it, not silently ignored', async () => {
      for (const [path, body] of refused) {
        const r = await api(app, 'POST', `/api/v3/${path}`, core, body);
        const member = Object.hasOwn(body, 'aad') ? 'aad' : 'encryptionContext';
        expect([path, r.status, r.body.title, r.body.detail]).toEqual([
          path,
          400,
          'Validation Failed',
          expect.stringContaining(`unknown member ${member}`),
        ]);
      }
    });

    it('when a batch item carries an unknown member, then that item alone is 400', async () => {
      const r = await post('encrypt', {
        items: [
          { kid: 'aes', data },
          { kid: 'aes', data, aad: 'x' },
        ],
      });
      expect((r.body.results as Array<{ status: number }>).map((x) => x.status)).toEqual([
        200, 400,
      ]);
    });
  });

  describe('data keys', () => {
    it.each(['aes', 'rsa'])(
      'when a data key under %s encrypts a large payload client-side with jose, then the wrapped key alone (decrypted later with the context) opens it',
      async (kid) => {
        const dk = await post('generate-data-key', { kid, keySpec: 'AES_256', context: CONTEXT });
        expect(dk.status).toBe(200);
        expect(Object.keys(dk.body).sort()).toEqual(['ciphertext', 'kid', 'plaintext', 'version']);
        expect(header(dk.body.ciphertext as string)).toMatchObject({
          kid: `${kid}#1`,
          ctx: expect.any(String),
        });
        let plaintextKey: Uint8Array | null = Buffer.from(dk.body.plaintext as string, 'base64');
        expect(plaintextKey.length).toBe(32);
        const payload = randomBytes(2 << 20);
        const sealed = await new CompactEncrypt(payload)
          .setProtectedHeader({ alg: 'dir', enc: 'A256GCM' })
          .encrypt(plaintextKey);
        plaintextKey = null; // the client keeps only the wrapped key next to the data
        const wrapped = dk.body.ciphertext;

        expect((await post('decrypt', { ciphertext: wrapped })).body.title).toBe(
          'Decryption Failed',
        );
        const unwrapped = await post('decrypt', { ciphertext: wrapped, context: CONTEXT });
        expect(unwrapped.body).toMatchObject({ kid, version: 1 });
        const { plaintext } = await compactDecrypt(
          sealed,
          Buffer.from(unwrapped.body.data as string, 'base64'),
        );
        expect(Buffer.from(plaintext).equals(payload)).toBe(true);
      },
    );

    it('when a data key is asked without plaintext, then only the wrapped key comes back, and it decrypts to 16 bytes for AES_128', async () => {
      const r = await post('generate-data-key-without-plaintext', {
        kid: 'ec-enc',
        keySpec: 'AES_128',
      });
      expect(r.status).toBe(200);
      expect(Object.keys(r.body).sort()).toEqual(['ciphertext', 'kid', 'version']);
      const d = await post('decrypt', { ciphertext: r.body.ciphertext });
      expect(Buffer.from(d.body.data as string, 'base64').length).toBe(16);
    });

    it.each([['AES_512'], ['aes_256'], [256], [undefined]])(
      'when keySpec is %p, then 400 naming keySpec',
      async (keySpec) => {
        const r = await post('generate-data-key', {
          kid: 'aes',
          ...(keySpec === undefined ? {} : { keySpec }),
        });
        expect(r.status).toBe(400);
        expect(r.body.detail).toMatch(/^keySpec must be one of AES_256, AES_128/);
      },
    );

    it('when the key signs only, then 422 key-usage-mismatch', async () => {
      expect((await post('generate-data-key', { kid: 'ed', keySpec: 'AES_256' })).status).toBe(422);
    });

    it('when the key is ML-KEM, then the data key is wrapped in an HPKE JWE (Integrated Encryption) that decrypt opens', async () => {
      const dk = await post('generate-data-key', { kid: 'kem', keySpec: 'AES_256' });
      expect(dk.status).toBe(200);
      expect(header(dk.body.ciphertext as string)).toMatchObject({ alg: 'HPKE-12', kid: 'kem#1' });
      expect((await post('decrypt', { ciphertext: dk.body.ciphertext })).body).toMatchObject({
        kid: 'kem',
        data: dk.body.plaintext,
      });
    });
  });

  describe('re-encrypt', () => {
    it('when a version-1 ciphertext is re-encrypted after rotation, then it is under version 2 with the same context and data, and no plaintext is answered', async () => {
      const old = (await post('encrypt', { kid: 'rot', data, context: CONTEXT })).body.ciphertext;
      expect((await api(app, 'POST', keys('/rot/rotate'), admin)).status).toBe(200);
      const r = await post('re-encrypt', { ciphertext: old, context: CONTEXT });
      expect(r.status).toBe(200);
      expect(Object.keys(r.body).sort()).toEqual([
        'ciphertext',
        'kid',
        'sourceKid',
        'sourceVersion',
        'version',
      ]);
      expect(r.body).toMatchObject({ kid: 'rot', version: 2, sourceKid: 'rot', sourceVersion: 1 });
      expect(header(r.body.ciphertext as string)).toMatchObject({ kid: 'rot#2', ver: 2 });
      expect(
        (await post('decrypt', { ciphertext: r.body.ciphertext, context: CONTEXT })).body,
      ).toEqual({ kid: 'rot', version: 2, data });
      expect((await post('decrypt', { ciphertext: r.body.ciphertext })).status).toBe(400);
    });

    it('when re-encrypted to another key and context, then only the target context opens it', async () => {
      const ct = (await post('encrypt', { kid: 'aes', data, context: CONTEXT })).body.ciphertext;
      const r = await post('re-encrypt', {
        ciphertext: ct,
        context: CONTEXT,
        targetKid: 'rsa',
        targetContext: { app: 'billing' },
      });
      expect(r.body).toMatchObject({ kid: 'rsa', version: 1, sourceKid: 'aes', sourceVersion: 1 });
      expect(
        (await post('decrypt', { ciphertext: r.body.ciphertext, context: { app: 'billing' } })).body
          .data,
      ).toBe(data);
      expect(
        (await post('decrypt', { ciphertext: r.body.ciphertext, context: CONTEXT })).status,
      ).toBe(400);
    });

    it("when the source context is wrong, the target signs only, or the target is another tenant's kid, then decryption-failed, 422 or 404", async () => {
      const ct = (await post('encrypt', { kid: 'aes', data, context: CONTEXT })).body.ciphertext;
      expect(
        (await post('re-encrypt', { ciphertext: ct, context: { tenant: 'other' } })).body.title,
      ).toBe('Decryption Failed');
      const usage = await post('re-encrypt', { ciphertext: ct, context: CONTEXT, targetKid: 'ed' });
      expect([usage.status, usage.body.type]).toEqual([
        422,
        `${app.config.publicBaseUrl}/problems/key-usage-mismatch`,
      ]);
      const other = await makeTenant(app, ['admin.keys.create']);
      expect(
        (
          await api(
            app,
            'POST',
            `/api/v3/admin/tenants/${other.tenantId}/keys`,
            await userToken(app, other),
            { kid: 'theirs', type: 'aes-256' },
          )
        ).status,
      ).toBe(201);
      expect(
        (await post('re-encrypt', { ciphertext: ct, context: CONTEXT, targetKid: 'theirs' }))
          .status,
      ).toBe(404);
    });

    it('when the role has crypto.decrypt but not crypto.encrypt, then re-encrypt is 403', async () => {
      const partial = await makeTenant(app, ['crypto.decrypt']);
      const r = await post(
        're-encrypt',
        { ciphertext: 'a.b.c.d.e' },
        await workloadToken(app, partial),
      );
      expect(r.status).toBe(403);
      expect(r.body.detail).toMatch(/crypto\.encrypt/);
    });
  });

  describe('versions', () => {
    it('when a ciphertext from before versioned kids names kid without # plus ver, then it still decrypts', async () => {
      const secret = (await app.ctx.keys.get(t.tenantId, 'aes')).versions
        .get(1)!
        .secretKey!.export();
      const legacy = await new CompactEncrypt(Buffer.from('attack at dawn'))
        .setProtectedHeader({ alg: 'dir', enc: 'A256GCM', kid: 'aes', ver: 1 })
        .encrypt(secret);
      expect((await post('decrypt', { ciphertext: legacy })).body).toEqual({
        kid: 'aes',
        version: 1,
        data,
      });
    });

    it('when kid#version and ver disagree, then decryption-failed', async () => {
      const ct = (await post('encrypt', { kid: 'aes', data })).body.ciphertext as string;
      const forged = [
        Buffer.from(JSON.stringify({ ...header(ct), ver: 2 })).toString('base64url'),
        ...ct.split('.').slice(1),
      ].join('.');
      expect((await post('decrypt', { ciphertext: forged })).body.title).toBe('Decryption Failed');
    });

    it("when a version is below the key's minDecryptionVersion, then decrypt and re-encrypt answer key-version-retired", async () => {
      const older = (await post('encrypt', { kid: 'rot', data })).body.ciphertext;
      expect(header(older as string).kid).toBe('rot#2');
      expect((await api(app, 'POST', keys('/rot/rotate'), admin)).status).toBe(200);
      // The setting is given through the key cache here (whatever reloads it): its admin route is tested with the key settings.
      const keyCache = app.ctx.keys;
      const get = keyCache.get.bind(keyCache);
      keyCache.get = async (tenantId, kid) => ({
        ...(await get(tenantId, kid)),
        ...(kid === 'rot' ? { minDecryptionVersion: 3 } : {}),
      });
      try {
        for (const r of [
          await post('decrypt', { ciphertext: older }),
          await post('re-encrypt', { ciphertext: older }),
        ]) {
          expect([r.status, r.body.type]).toEqual([
            409,
            `${app.config.publicBaseUrl}/problems/key-version-retired`,
          ]);
        }
      } finally {
        keyCache.get = get;
      }
      expect((await post('re-encrypt', { ciphertext: older })).body).toMatchObject({
        version: 3,
        sourceVersion: 2,
      });
    });
  });

  describe('random bytes', () => {
    it('when 32 bytes are asked twice, then two different 32-byte values', async () => {
      const [a, b] = [await post('random', { bytes: 32 }), await post('random', { bytes: 32 })];
      expect(Buffer.from(a.body.data as string, 'base64').length).toBe(32);
      expect(a.body.data).not.toBe(b.body.data);
    });

    it.each([[0], [1025], [1.5], ['16'], [null], [undefined]])(
      'when bytes is %p, then 400 naming bytes',
      async (bytes) => {
        const r = await post('random', bytes === undefined ? {} : { bytes });
        expect(r.status).toBe(400);
        expect(r.body.detail).toBe('bytes must be an integer from 1 to 1024');
      },
    );
  });

  describe('review regressions', () => {
    const failed = () => `${app.config.publicBaseUrl}/problems/decryption-failed`;

    it('when a context value is an upper-case UUID, then only that exact value decrypts (the entry step lower-cased it, so a lower-case spelling opened it)', async () => {
      const id = '3F2504E0-4F89-11D3-9A0C-0305E82C3301';
      const enc = await post('encrypt', { kid: 'aes', data, context: { object: id } });
      expect(
        (await post('decrypt', { ciphertext: enc.body.ciphertext, context: { object: id } }))
          .status,
      ).toBe(200);
      const lower = await post('decrypt', {
        ciphertext: enc.body.ciphertext,
        context: { object: id.toLowerCase() },
      });
      expect([lower.status, lower.body.type]).toEqual([400, failed()]);
    });

    it('when a ciphertext header names a kid no key can have (aes##2, 200 characters), then decryption-failed, not a validation problem about a kid the caller never sent', async () => {
      const enc = await post('encrypt', { kid: 'aes', data });
      const [, ...rest] = (enc.body.ciphertext as string).split('.');
      for (const kid of ['aes##2', `${'a'.repeat(200)}#1`]) {
        const forged = [
          Buffer.from(JSON.stringify({ ...header(enc.body.ciphertext as string), kid })).toString(
            'base64url',
          ),
          ...rest,
        ].join('.');
        const r = await post('decrypt', { ciphertext: forged });
        expect([kid, r.status, r.body.type]).toEqual([kid, 400, failed()]);
      }
    });

    it('when verify names a version that is not a positive integer ("1", [1], true), then 400 validation-failed', async () => {
      for (const version of ['1', [1], true, 0]) {
        const r = await post('verify', { kid: 'ed', data, signature: data, version });
        expect([JSON.stringify(version), r.status]).toEqual([JSON.stringify(version), 400]);
      }
    });

    it('when a KEM key version is retired by minDecryptionVersion, then decapsulate refuses it with key-version-retired like decrypt (it answered the shared secret)', async () => {
      const platform = await adminToken(app);
      expect(
        (await api(app, 'POST', keys(''), admin, { kid: 'kem-retire', type: 'ml-kem-768' })).status,
      ).toBe(201);
      const enc = await api(app, 'POST', '/api/v3/pqc/encapsulate', core, { kid: 'kem-retire' });
      expect(enc.status).toBe(200);
      expect((await api(app, 'POST', keys('/kem-retire/rotate'), admin)).status).toBe(200);
      expect(
        (await api(app, 'PATCH', keys('/kem-retire'), platform, { minDecryptionVersion: 2 }))
          .status,
      ).toBe(200);
      const r = await api(app, 'POST', '/api/v3/pqc/decapsulate', core, {
        kid: 'kem-retire',
        ciphertext: enc.body.ciphertext,
        version: 1,
      });
      expect([r.status, r.body.type]).toEqual([
        409,
        `${app.config.publicBaseUrl}/problems/key-version-retired`,
      ]);
    });
  });

  it('when the new operations are batched, then each item has its own result', async () => {
    const r = await post('generate-data-key', {
      items: [
        { kid: 'aes', keySpec: 'AES_128' },
        { kid: 'aes', keySpec: 'DES' },
        { kid: 'missing', keySpec: 'AES_256' },
      ],
    });
    expect((r.body.results as Array<{ status: number }>).map((x) => x.status)).toEqual([
      200, 400, 404,
    ]);
    const rnd = await post('random', { items: [{ bytes: 8 }, { bytes: 0 }] });
    expect((rnd.body.results as Array<{ status: number }>).map((x) => x.status)).toEqual([
      200, 400,
    ]);
  });

  it('when only the runtime lane listens, then it serves the data-key, re-encrypt and random operations', async () => {
    const lane = createRuntimeLane(app.ctx);
    const server: Server = createServer((req, res) => {
      if (!lane(req, res)) res.writeHead(404).end();
    }).listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    try {
      const laneApp = { ...app, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
      const dk = await api(laneApp, 'POST', `${C}/generate-data-key-without-plaintext`, core, {
        kid: 'aes',
        keySpec: 'AES_256',
      });
      expect(dk.status).toBe(200);
      expect(
        (await api(laneApp, 'POST', `${C}/re-encrypt`, core, { ciphertext: dk.body.ciphertext }))
          .status,
      ).toBe(200);
      expect((await api(laneApp, 'POST', `${C}/random`, core, { bytes: 4 })).status).toBe(200);
      expect(
        (
          await api(laneApp, 'POST', `${C}/generate-data-key`, core, {
            kid: 'aes',
            keySpec: 'AES_256',
          })
        ).status,
      ).toBe(200);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('when the new operations ran, then the audit log holds their tallies', async () => {
    await app.ctx.audit.flush();
    for (const action of [
      'crypto.generate-data-key',
      'crypto.generate-data-key-without-plaintext',
      'crypto.re-encrypt',
      'crypto.random',
    ]) {
      const r = await api(
        app,
        'GET',
        `/api/v3/audit/events?action=${action}&outcome=success`,
        core,
      );
      expect([action, (r.body.items as unknown[]).length > 0]).toEqual([action, true]);
    }
  });
});
