import { randomBytes } from 'node:crypto';
import {
  OpenSslDir,
  REENCRYPT,
  RESIGN,
  convert,
  importKey,
  makeActor,
  makeKey,
  openJwe,
  postParts,
  postRaw,
  protectedOf,
  publicOf,
  startTestApp,
  verifyDetached,
} from './helpers.ts';
import type { Actor, Answer, Jws, TestApp, TestKey } from './helpers.ts';
import { cms } from '../../../support/fixtures/cms.ts';

let app: TestApp;
let ssl: OpenSslDir;
let actor: Actor;
let keys: Record<
  'rsa' | 'rsaSigner' | 'p256' | 'target' | 'targetSigner' | 'targetEc' | 'targetEcSigner',
  TestKey
>;
let data: Buffer;
let enveloped: Answer;

beforeAll(async () => {
  app = await startTestApp();
  ssl = new OpenSslDir();
  keys = {
    rsa: makeKey(ssl, 'src-rsa', 'rsa-2048'),
    p256: makeKey(ssl, 'src-p256', 'ec-p256'),
    target: makeKey(ssl, 'dst-rsa', 'rsa-2048'),
    targetEc: makeKey(ssl, 'dst-p384', 'ec-p384'),
    // A key signs or encrypts, never both: the re-signing roles have keys of their own.
    rsaSigner: makeKey(ssl, 'src-rsa-signer', 'rsa-2048'),
    targetSigner: makeKey(ssl, 'dst-rsa-signer', 'rsa-2048'),
    targetEcSigner: makeKey(ssl, 'dst-p384-signer', 'ec-p384'),
  };
  actor = await makeActor(app);
  const usages = new Map<TestKey, 'sign' | 'encrypt'>([
    [keys.rsaSigner, 'sign'],
    [keys.targetSigner, 'sign'],
    [keys.targetEc, 'encrypt'],
  ]);
  for (const k of Object.values(keys)) await importKey(app, actor, ssl, k, usages.get(k));
  data = randomBytes(200_003);
  ssl.write('data.bin', data);
  enveloped = await convert(
    app,
    actor.user,
    cms.encrypt(ssl, 'data.bin', {
      to: { recip: keys.rsa },
      cipher: 'aes-256-cbc',
      binary: true,
      outform: 'DER',
    }),
  );
  expect(enveloped.status).toBe(200);
});

afterAll(async () => {
  ssl.cleanup();
  await app.stop();
});

const reencrypt = (body: Buffer, contentType: string, query: string, token = actor.workload) =>
  postRaw(app, `${REENCRYPT}?${query}`, token, body, contentType);

function signDetached(key: TestKey): Buffer {
  return cms.sign(ssl, 'data.bin', { by: key, detached: false, binary: true, outform: 'DER' });
}

describe('POST /api/v3/crypto/stream/reencrypt', () => {
  it('when only the content key is re-wrapped, then the ciphertext and tag pass byte for byte and jose decrypts with the target key', async () => {
    const before = await openJwe(enveloped, keys.rsa.privateKey);
    const r = await reencrypt(
      enveloped.body,
      enveloped.headers.get('content-type')!,
      `kid=${keys.target.kid}`,
    );
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^multipart\/mixed; boundary="----service-/);
    const after = await openJwe(r, keys.target.privateKey);
    expect(after.closed).toBe(true);
    expect(after.header.recipients[0].header).toEqual({
      alg: 'RSA-OAEP-256',
      kid: `${keys.target.kid}#1`,
    });
    expect(after.parts[1].body.equals(before.parts[1].body)).toBe(true);
    expect(after.header.protected).toBe(before.header.protected);
    expect(after.plaintext.equals(data)).toBe(true);
  });

  it('when rotateContentKey=true, then the content is under a new key and IV, for an EC target too, and still decrypts to the content', async () => {
    const before = await openJwe(enveloped, keys.rsa.privateKey);
    const r = await reencrypt(
      enveloped.body,
      enveloped.headers.get('content-type')!,
      `kid=${keys.targetEc.kid}&rotateContentKey=true`,
    );
    expect(r.status).toBe(200);
    const after = await openJwe(r, keys.targetEc.privateKey);
    expect(after.header.recipients[0].header).toMatchObject({
      alg: 'ECDH-ES+A256KW',
      kid: `${keys.targetEc.kid}#1`,
    });
    expect(after.header.iv).not.toBe(before.header.iv);
    expect(after.ciphertext.equals(before.ciphertext)).toBe(false);
    expect(after.plaintext.equals(data)).toBe(true);
  });

  it('when a preserve (A256CBC-HS512) result is re-encrypted with rotation, then it becomes A256GCM and decrypts', async () => {
    const preserved = await convert(
      app,
      actor.user,
      cms.encrypt(ssl, 'data.bin', {
        to: { recip: keys.rsa },
        cipher: 'aes-256-cbc',
        binary: true,
        outform: 'DER',
      }),
      { contentEncryption: 'preserve' },
    );
    const kept = await reencrypt(
      preserved.body,
      preserved.headers.get('content-type')!,
      `kid=${keys.target.kid}`,
    );
    expect((await openJwe(kept, keys.target.privateKey)).enc).toBe('A256CBC-HS512');
    const rotated = await reencrypt(
      preserved.body,
      preserved.headers.get('content-type')!,
      `kid=${keys.target.kid}&rotateContentKey=true`,
    );
    const opened = await openJwe(rotated, keys.target.privateKey);
    expect(opened.enc).toBe('A256GCM');
    expect(opened.plaintext.equals(data)).toBe(true);
  });

  it('when the JWE carries a trailing JWS (EnvelopedData of SignedData), then the JWS part passes unchanged and still verifies', async () => {
    ssl.write('signed.der', signDetached(keys.p256));
    const converted = await convert(
      app,
      actor.user,
      cms.encrypt(ssl, 'signed.der', {
        to: { recip: keys.rsa },
        cipher: 'aes-256-cbc',
        binary: true,
        outform: 'DER',
      }),
    );
    const r = await reencrypt(
      converted.body,
      converted.headers.get('content-type')!,
      `kid=${keys.target.kid}&rotateContentKey=true`,
    );
    const opened = await openJwe(r, keys.target.privateKey);
    expect(opened.parts).toHaveLength(3);
    expect(opened.plaintext.equals(data)).toBe(true);
    await verifyDetached(JSON.parse(opened.parts[2].body.toString()), data, publicOf(keys.p256));
  });

  it('when a ciphertext byte of a large JWE was flipped, then the answer is cut before its tag and closing delimiter', async () => {
    const tampered = Buffer.from(enveloped.body);
    tampered[tampered.length - 5000] ^= 1;
    for (const rotate of ['false', 'true']) {
      const r = await reencrypt(
        tampered,
        enveloped.headers.get('content-type')!,
        `kid=${keys.target.kid}&rotateContentKey=${rotate}`,
      );
      expect(r.status).toBe(200);
      expect(r.cut).toBe(true);
      expect(r.body.includes(Buffer.from('----service-'))).toBe(true);
    }
  });

  it('when a ciphertext byte of a small JWE was flipped, then the tag is checked before the answer begins: 400 decryption-failed', async () => {
    ssl.write('small.bin', data.subarray(0, 1000));
    const small = await convert(
      app,
      actor.user,
      cms.encrypt(ssl, 'small.bin', {
        to: { recip: keys.rsa },
        cipher: 'aes-256-cbc',
        binary: true,
        outform: 'DER',
      }),
    );
    const tampered = Buffer.from(small.body);
    tampered[tampered.length - 100] ^= 1;
    for (const rotate of ['false', 'true']) {
      const r = await reencrypt(
        tampered,
        small.headers.get('content-type')!,
        `kid=${keys.target.kid}&rotateContentKey=${rotate}`,
      );
      expect(r.json()).toMatchObject({
        status: 400,
        type: expect.stringMatching(/\/problems\/decryption-failed$/),
      });
    }
  });

  it('when the target kid is unknown or missing, or the body is not multipart/mixed, then 404 key-not-found, 400 and 415', async () => {
    const ct = enveloped.headers.get('content-type')!;
    expect((await reencrypt(enveloped.body, ct, 'kid=nope')).json()).toMatchObject({
      status: 404,
      type: expect.stringMatching(/key-not-found$/),
    });
    expect((await reencrypt(enveloped.body, ct, '')).status).toBe(400);
    expect(
      (await reencrypt(enveloped.body, 'application/octet-stream', `kid=${keys.target.kid}`))
        .status,
    ).toBe(415);
  });

  it('when rotateContentKey is not true or false (1, 0, empty), then 400 naming it: the query is read by the row, as every documented boolean is', async () => {
    const ct = enveloped.headers.get('content-type')!;
    for (const raw of ['1', '0', '', 'yes']) {
      const r = await reencrypt(
        enveloped.body,
        ct,
        `kid=${keys.target.kid}&rotateContentKey=${raw}`,
      );
      const problem = r.json<{ status: number; detail: string }>();
      expect([raw, problem.status, problem.detail]).toEqual([
        raw,
        400,
        expect.stringMatching(/^rotateContentKey /),
      ]);
    }
  });

  it('when the token is a HUMAN (service-admin) token, then 401: the crypto paths take service-core tokens only', async () => {
    expect(
      (
        await reencrypt(
          enveloped.body,
          enveloped.headers.get('content-type')!,
          `kid=${keys.target.kid}`,
          actor.user,
        )
      ).status,
    ).toBe(401);
  });
});

describe('POST /api/v3/crypto/stream/resign', () => {
  async function converted(key: TestKey, metadata: Record<string, unknown> = {}): Promise<Jws> {
    const r = await convert(app, actor.user, signDetached(key), metadata);
    expect(r.status).toBe(200);
    return r.json<Jws>();
  }
  const resign = (jws: Jws | string, content: Buffer, kid: string) =>
    postParts(app, `${RESIGN}?kid=${kid}`, actor.workload, [
      ['signature', typeof jws === 'string' ? jws : JSON.stringify(jws)],
      ['file', { data: content }],
    ]);

  it('when an RS256 JWS is re-signed for an EC key, then the new JWS is ES384 with the kid protected and jose verifies it over the content', async () => {
    const r = await resign(await converted(keys.rsaSigner), data, keys.targetEcSigner.kid);
    expect(r.status).toBe(200);
    const jws = r.json<Jws>();
    expect(protectedOf(jws)).toEqual({
      alg: 'ES384',
      kid: `${keys.targetEcSigner.kid}#1`,
      b64: false,
      crit: ['b64'],
    });
    await verifyDetached(jws, data, publicOf(keys.targetEcSigner));
  });

  it('when the JWS is b64 true (RFC 7515 Appendix F), then the new one is too and verifies', async () => {
    const r = await resign(await converted(keys.p256, { b64: true }), data, keys.targetSigner.kid);
    expect(r.status).toBe(200);
    const jws = r.json<Jws>();
    expect(protectedOf(jws)).toEqual({ alg: 'RS256', kid: `${keys.targetSigner.kid}#1` });
    await verifyDetached(jws, data, publicOf(keys.targetSigner));
  });

  it('when the content differs from what was signed, then 422 signature-invalid', async () => {
    const other = Buffer.from(data);
    other[7] ^= 0x80;
    const r = await resign(await converted(keys.rsaSigner), other, keys.targetSigner.kid);
    expect(r.json()).toMatchObject({
      status: 422,
      type: expect.stringMatching(/\/problems\/signature-invalid$/),
    });
  });

  it('when the signature part is not JSON, comes second, or names an unknown kid, then 400, 400 and 404', async () => {
    expect((await resign('not json', data, keys.targetSigner.kid)).status).toBe(400);
    const swapped = await postParts(app, `${RESIGN}?kid=${keys.targetSigner.kid}`, actor.workload, [
      ['file', { data }],
      ['signature', JSON.stringify(await converted(keys.rsaSigner))],
    ]);
    expect(swapped.status).toBe(400);
    const jws = await converted(keys.rsaSigner);
    // The converter's kid is protected (with kw_signers): the renamed kid goes there.
    const renamed = {
      ...jws,
      protected: Buffer.from(JSON.stringify({ ...protectedOf(jws), kid: 'unknown-kid' })).toString(
        'base64url',
      ),
    };
    expect((await resign(renamed, data, keys.targetSigner.kid)).json()).toMatchObject({
      status: 404,
      type: expect.stringMatching(/key-not-found$/),
    });
  });
});

describe('tenant isolation', () => {
  it("when tenant B uses tenant A's files and kids, then nothing of A is found: 404 for convert, reencrypt and resign", async () => {
    const b = await makeActor(app);
    const file = cms.encrypt(ssl, 'data.bin', {
      to: { recip: keys.rsa },
      cipher: 'aes-256-cbc',
      binary: true,
      outform: 'DER',
    });
    expect((await convert(app, b.user, file)).json()).toMatchObject({
      status: 404,
      type: expect.stringMatching(/cms-key-not-imported$/),
    });
    const r = await postRaw(
      app,
      `${REENCRYPT}?kid=${keys.target.kid}`,
      b.workload,
      enveloped.body,
      enveloped.headers.get('content-type')!,
    );
    expect(r.json()).toMatchObject({ status: 404, type: expect.stringMatching(/key-not-found$/) });
    const jws = (await convert(app, actor.user, signDetached(keys.rsaSigner))).json<Jws>();
    const s = await postParts(app, `${RESIGN}?kid=${keys.targetSigner.kid}`, b.workload, [
      ['signature', JSON.stringify(jws)],
      ['file', { data }],
    ]);
    expect(s.status).toBe(404);
  });

  it('when the role lacks the stream permissions, then 403 without an error member', async () => {
    const c = await makeActor(app, ['migration.analyze']);
    const r = await convert(app, c.user, Buffer.from('x'));
    expect(r.status).toBe(403);
    expect(r.json().error).toBeUndefined();
    expect(
      (
        await postRaw(
          app,
          `${REENCRYPT}?kid=x`,
          c.workload,
          enveloped.body,
          enveloped.headers.get('content-type')!,
        )
      ).status,
    ).toBe(403);
  });
});
