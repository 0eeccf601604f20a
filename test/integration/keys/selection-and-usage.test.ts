/**
 * Regressions of the hardening issue for keys: bulk selectors that matched every key (item 6),
 * key usage bypassed on the stream and conversion paths and ignored at keystore import (item 7),
 * and inconsistent key pairs accepted at import (item 16). Real keys, openssl-made certificates
 * and CMS files, the real API.
 */
import { createPrivateKey, generateKeyPairSync, randomBytes } from 'node:crypto';
import { TEST_ENGINE } from '../../../support/database.ts';
import { api } from '../../../support/auth.ts';
import {
  OpenSslDir,
  PERMISSIONS,
  REENCRYPT,
  RESIGN,
  convert,
  encryptCms,
  importKey,
  makeActor,
  makeKey,
  postParts,
  postRaw,
  signCms,
  startTestApp,
} from '../migration/helpers.ts';
import type { Actor, Answer, FormValue, Jws, TestApp, TestKey } from '../migration/helpers.ts';

let app: TestApp;
let ssl: OpenSslDir;
let actor: Actor;
let keysPath: string;
const data = randomBytes(5_000);

beforeAll(async () => {
  app = await startTestApp();
  ssl = new OpenSslDir();
  ssl.write('data.bin', data);
  actor = await makeActor(app, [...PERMISSIONS, 'admin.keys.read', 'crypto.sign']);
  keysPath = `/api/v3/admin/tenants/${actor.tenant.tenantId}/keys`;
});

afterAll(async () => {
  ssl.cleanup();
  await app.stop();
});

/** Uploads a PEM keystore to the tenant's import endpoint, with optional kid and usage. */
function importPem(
  pem: Buffer | string,
  fields: { kid?: string; usage?: string } = {},
): Promise<Answer> {
  const parts: Array<[string, FormValue]> = [
    ['keystore', { data: Buffer.from(pem), type: 'application/x-pem-file', filename: 'k.pem' }],
  ];
  for (const [name, value] of Object.entries(fields))
    if (value !== undefined) parts.push([name, value]);
  return postParts(app, `${keysPath}/import-keystore`, actor.user, parts);
}

const pemOf = (key: TestKey) => Buffer.concat([ssl.read(key.keyFile), ssl.read(key.certFile)]);

describe(`bulk key operations select only what they name (${TEST_ENGINE})`, () => {
  let owner: Actor;
  let bulk: string;
  let token: string;
  const orchestrate = (body: unknown) => api(app, 'POST', `${bulk}/orchestrate`, token, body);
  const states = async () =>
    Object.fromEntries(
      (
        await app.ctx
          .db('keys')
          .where({ tenant_id: owner.tenant.tenantId })
          .orderBy('kid')
          .select('kid', 'state')
      ).map((r) => [r.kid, r.state]),
    );
  const untouched = { 'keep-1': 'active', 'tmp-1': 'active', 'tmp-2': 'active' };

  beforeAll(async () => {
    // A tenant of its own, so "every key" is a known set.
    owner = await makeActor(app, ['admin.keys.create', 'admin.keys.orchestrate']);
    token = owner.user;
    bulk = `/api/v3/admin/tenants/${owner.tenant.tenantId}/keys`;
    for (const kid of Object.keys(untouched))
      expect((await api(app, 'POST', bulk, token, { type: 'aes-256', kid })).status).toBe(201);
  });

  it('when the selector has an unknown member (kid_prefix), then 400 and no key is revoked, where before every key of the tenant was', async () => {
    const r = await orchestrate({ operation: 'revoke', selector: { kid_prefix: 'tmp-' } });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({
      type: expect.stringMatching(/validation-failed$/),
      detail: expect.stringContaining('kid_prefix'),
    });
    expect(await states()).toEqual(untouched);
  });

  it('when the selector is empty, nested, of the wrong type, or all is not a lone true, then 400 and nothing changes', async () => {
    const selectors: unknown[] = [
      {},
      { kidPrefix: { startsWith: 'tmp-' } },
      { state: ['active'] },
      { type: 'des' },
      { usage: 'wrap' },
      { all: false },
      { all: true, kidPrefix: 'tmp-' },
      'all',
      [],
      null,
    ];
    for (const selector of selectors) {
      const r = await orchestrate({ operation: 'revoke', selector });
      expect([selector, r.status]).toEqual([selector, 400]);
    }
    for (const body of [
      { operation: 'revoke' },
      { operation: 'revoke', kids: ['tmp-1'], selector: { all: true } },
      { operation: 'revoke', kids: ['tmp-1'], dry_run: true },
      { operation: 'revoke', kids: ['../x'] },
    ]) {
      expect([body, (await orchestrate(body)).status]).toEqual([body, 400]);
    }
    expect(await states()).toEqual(untouched);
  });

  it('when dryRun is true, then 200 with the kids that would be touched and their count, and nothing changes', async () => {
    expect(
      (await orchestrate({ operation: 'revoke', selector: { kidPrefix: 'tmp-' }, dryRun: true }))
        .body,
    ).toEqual({ operation: 'revoke', dryRun: true, total: 2, kids: ['tmp-1', 'tmp-2'] });
    expect(
      (await orchestrate({ operation: 'suspend', selector: { all: true }, dryRun: true })).body,
    ).toMatchObject({ total: 3, kids: ['keep-1', 'tmp-1', 'tmp-2'] });
    expect(await states()).toEqual(untouched);
  });

  it('when expectedCount differs from the match, then 409 with both counts and nothing changes; when it agrees, then the operation runs', async () => {
    const refused = await orchestrate({
      operation: 'suspend',
      selector: { all: true },
      expectedCount: 2,
    });
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({
      type: expect.stringMatching(/conflict$/),
      expectedCount: 2,
      matched: 3,
    });
    expect(await states()).toEqual(untouched);
    const done = await orchestrate({
      operation: 'suspend',
      selector: { kidPrefix: 'tmp-' },
      expectedCount: 2,
    });
    expect(done.body).toMatchObject({ operation: 'suspend', total: 2, succeeded: 2 });
    expect(await states()).toEqual({ ...untouched, 'tmp-1': 'suspended', 'tmp-2': 'suspended' });
  });
});

describe(`every path that uses a key checks its usage (${TEST_ENGINE})`, () => {
  let encryptOnly: TestKey;
  let signOnly: TestKey;
  let twice: TestKey;

  beforeAll(async () => {
    encryptOnly = makeKey(ssl, 'use-rsa', 'rsa-2048');
    signOnly = makeKey(ssl, 'use-p256', 'ec-p256');
    twice = makeKey(ssl, 'twice', 'rsa-2048');
    // Their certificates have no keyUsage, which allows both usages: the import narrows each to one.
    await importKey(app, actor, ssl, encryptOnly, 'encrypt');
    await importKey(app, actor, ssl, signOnly, 'sign');
    // The encrypt import first, so a lookup that ignores usage finds it first.
    await importKey(app, actor, ssl, { ...twice, kid: 'twice-enc' }, 'encrypt');
    await importKey(app, actor, ssl, { ...twice, kid: 'twice-sign' }, 'sign');
  });

  const expectUsageMismatch = (r: Answer) => {
    expect(r.status).toBe(422);
    expect(r.json()).toMatchObject({ type: expect.stringMatching(/key-usage-mismatch$/) });
  };

  it('when /crypto/stream/resign names an encrypt-only target kid, then 422 key-usage-mismatch instead of a signature by it', async () => {
    const jws = (await convert(app, actor.user, signCms(ssl, signOnly))).json<Jws>();
    const r = await postParts(app, `${RESIGN}?kid=${encryptOnly.kid}`, actor.workload, [
      ['signature', JSON.stringify(jws)],
      ['file', { data }],
    ]);
    expectUsageMismatch(r);
  });

  it('when /crypto/stream/reencrypt names a sign-only target kid, then 422 key-usage-mismatch instead of a JWE for it', async () => {
    const enveloped = await convert(app, actor.user, encryptCms(ssl, encryptOnly));
    expect(enveloped.status).toBe(200);
    expectUsageMismatch(
      await postRaw(
        app,
        `${REENCRYPT}?kid=${signOnly.kid}`,
        actor.workload,
        enveloped.body,
        enveloped.headers.get('content-type')!,
      ),
    );
  });

  it('when the same certificate was imported for each usage, then conversion signs with the sign key and decrypts with the encrypt key', async () => {
    const signed = await convert(app, actor.user, signCms(ssl, twice));
    expect(signed.status).toBe(200);
    const header = JSON.parse(Buffer.from(signed.json<Jws>().protected, 'base64url').toString());
    expect(header.kid).toBe('twice-sign#1');
    const enveloped = await convert(app, actor.user, encryptCms(ssl, twice));
    expect(enveloped.status).toBe(200);
    expect(enveloped.body.toString('latin1')).toContain('"kid":"twice-enc#1"');
  });

  it('when signerKid names an encrypt key, then 422 key-usage-mismatch, as /crypto/sign answers for the same key', async () => {
    expectUsageMismatch(
      await convert(app, actor.user, signCms(ssl, twice), { signerKid: 'twice-enc' }),
    );
    const sign = await api(app, 'POST', '/api/v3/crypto/sign', actor.workload, {
      kid: 'twice-enc',
      data: data.toString('base64'),
    });
    expect([sign.status, sign.body.type]).toEqual([
      422,
      expect.stringMatching(/key-usage-mismatch$/),
    ]);
  });

  it('when the same certificate is imported again for the same usage, then 409 naming the existing kid, and nothing is stored', async () => {
    const r = await importPem(pemOf(twice), { kid: 'twice-again', usage: 'sign' });
    expect(r.status).toBe(409);
    expect(r.json()).toMatchObject({
      type: expect.stringMatching(/conflict$/),
      detail: expect.stringContaining('twice-sign'),
      kid: 'twice-sign',
      usage: 'sign',
    });
    expect((await api(app, 'GET', `${keysPath}/twice-again`, actor.user)).status).toBe(404);
  });
});

describe(`keystore import takes the usage from the certificate (${TEST_ENGINE})`, () => {
  const RSA = 'rsa-2048';
  const P256 = 'ec-p256';
  const usagesOf = (r: Answer) =>
    r
      .json<{ keys: Array<{ usage: string }> }>()
      .keys.map((k) => k.usage)
      .sort();

  it("when keyUsage is digitalSignature (or nonRepudiation), then an RSA key imports for signing, not its type's default encrypt", async () => {
    for (const ku of ['keyUsage=digitalSignature', 'keyUsage=nonRepudiation']) {
      const r = await importPem(pemOf(makeKey(ssl, `ku-sign-${ku.length}`, RSA, ku)));
      expect([ku, r.status, usagesOf(r)]).toEqual([ku, 201, ['sign']]);
    }
  });

  it("when keyUsage is keyAgreement, then an EC key imports for encryption, not its type's default sign", async () => {
    const r = await importPem(pemOf(makeKey(ssl, 'ku-agree', P256, 'keyUsage=keyAgreement')));
    expect([r.status, usagesOf(r)]).toEqual([201, ['encrypt']]);
  });

  it('when extendedKeyUsage is codeSigning alone, then the key signs; when keyUsage allows both, then one key enabled for both', async () => {
    expect(
      usagesOf(
        await importPem(pemOf(makeKey(ssl, 'eku-code', RSA, 'extendedKeyUsage=codeSigning'))),
      ),
    ).toEqual(['sign']);
    const both = makeKey(ssl, 'ku-both', RSA, 'keyUsage=digitalSignature,keyEncipherment');
    const r = await importPem(pemOf(both), { kid: 'ku-both-one' });
    expect(r.status).toBe(201);
    expect(r.json<{ keys: unknown[] }>().keys).toEqual([
      expect.objectContaining({
        kid: 'ku-both-one',
        usage: 'encrypt',
        usages: ['encrypt', 'sign'],
        allowedUsages: ['encrypt', 'sign'],
      }),
    ]);
    // The certificate is held for both usages now: a second import for either is a 409.
    expect((await importPem(pemOf(both), { usage: 'sign' })).status).toBe(409);
  });

  it("when usage contradicts the certificate's keyUsage, then 422 key-usage-mismatch and nothing is stored", async () => {
    const r = await importPem(
      pemOf(makeKey(ssl, 'ku-only-sign', RSA, 'keyUsage=digitalSignature')),
      {
        kid: 'ku-contradicted',
        usage: 'encrypt',
      },
    );
    expect(r.status).toBe(422);
    expect(r.json()).toMatchObject({ type: expect.stringMatching(/key-usage-mismatch$/) });
    expect((await api(app, 'GET', `${keysPath}/ku-contradicted`, actor.user)).status).toBe(404);
  });
});

describe(`inconsistent key pairs are refused at import (${TEST_ENGINE})`, () => {
  const rsaJwk = () =>
    generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' });
  const pem = (jwk: object) =>
    createPrivateKey({ key: jwk as never, format: 'jwk' }).export({
      format: 'pem',
      type: 'pkcs8',
    }) as string;

  it('when an RSA private key has a q (or d) of another key, then 400 keystore-key-invalid naming the broken relation, where it imported with 201 before', async () => {
    const real = rsaJwk();
    const other = rsaJwk();
    for (const [member, named] of [
      ['q', 'n is not p * q'],
      ['d', 'd is not the inverse of e'],
    ] as const) {
      const r = await importPem(pem({ ...real, [member]: other[member] }), {
        kid: `bad-rsa-${member}`,
      });
      expect([member, r.status]).toEqual([member, 400]);
      expect(r.json()).toMatchObject({
        type: expect.stringMatching(/keystore-key-invalid$/),
        detail: expect.stringContaining(named),
      });
      expect((await api(app, 'GET', `${keysPath}/bad-rsa-${member}`, actor.user)).status).toBe(404);
    }
  });

  it("when an EC private scalar does not belong to the public point it carries (the certificate's), then 400 keystore-key-invalid", async () => {
    const key = makeKey(ssl, 'ec-forged', 'ec-p256');
    const stranger = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({
      format: 'jwk',
    });
    const forged = pem({ ...key.privateKey.export({ format: 'jwk' }), d: stranger.d });
    const r = await importPem(Buffer.concat([Buffer.from(forged), ssl.read(key.certFile)]), {
      kid: 'ec-forged',
    });
    expect(r.status).toBe(400);
    expect(r.json()).toMatchObject({ type: expect.stringMatching(/keystore-key-invalid$/) });
    expect((await api(app, 'GET', `${keysPath}/ec-forged`, actor.user)).status).toBe(404);
  });

  it('when the private key belongs to another certificate, then 400, and the consistent key of the same shape still imports', async () => {
    const mine = makeKey(ssl, 'ec-mine', 'ec-p256');
    const theirs = makeKey(ssl, 'ec-theirs', 'ec-p256');
    const r = await importPem(Buffer.concat([ssl.read(mine.keyFile), ssl.read(theirs.certFile)]), {
      kid: 'ec-crossed',
    });
    expect([r.status, r.json().type]).toEqual([
      400,
      expect.stringMatching(/keystore-key-mismatch$/),
    ]);
    const ok = await importPem(pemOf(mine), { kid: 'ec-mine' });
    expect(ok.status).toBe(201);
  });
});
