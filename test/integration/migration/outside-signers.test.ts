/**
 * Outside signers: mail signed by someone whose private key the tenant does not
 * hold. The signature is verified with the certificate the file carries or one imported to
 * verify only, optionally up to a trust anchor, and the JWS is signed by the tenant's archive
 * signing key. Files are made with the openssl CLI; every JWS is checked with jose.
 */
import { randomBytes, X509Certificate } from 'node:crypto';
import { flattenedVerify } from 'jose';
import {
  ANALYZE,
  OpenSslDir,
  PERMISSIONS,
  convert,
  importKey,
  makeActor,
  makeKey,
  postParts,
  postRaw,
  protectedOf,
  publicOf,
  startTestApp,
  verifyDetached,
} from './helpers.ts';
import type { Actor, Jws, TestApp, TestKey } from './helpers.ts';
import { cms } from '../../../support/fixtures/cms.ts';

let app: TestApp;
let ssl: OpenSslDir;
let actor: Actor;
let archive: TestKey;
let own: TestKey;
let data: Buffer;

interface OriginalSigner {
  x5c: string[];
  signingTime: string | null;
  digestAlg: string;
  verified: string;
}

/** A CA (self-signed, CA:TRUE by openssl's req defaults) and an outsider's certificate it issued. */
function outsider(name: string, ca: string): void {
  ssl.run([
    'req',
    '-new',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-keyout',
    `${name}.key`,
    '-out',
    `${name}.csr`,
    '-subj',
    `/CN=${name}/O=Outside Sender`,
  ]);
  ssl.run([
    'x509',
    '-req',
    '-in',
    `${name}.csr`,
    '-CA',
    `${ca}.crt`,
    '-CAkey',
    `${ca}.key`,
    '-CAcreateserial',
    '-days',
    '30',
    '-out',
    `${name}.crt`,
  ]);
}

function sign(name: string, args: string[] = []): Buffer {
  return cms.sign(ssl, 'data.bin', {
    by: { certFile: `${name}.crt`, keyFile: `${name}.key` },
    detached: false,
    binary: true,
    outform: 'DER',
    extra: args,
  });
}

async function importCertificate(
  a: Actor,
  file: string,
  anchor = false,
): Promise<Record<string, unknown>> {
  const r = await postParts(
    app,
    `/api/v3/admin/tenants/${a.tenant.tenantId}/keys/import-keystore`,
    a.user,
    [
      ['keystore', { data: ssl.read(file), type: 'application/x-pem-file', filename: file }],
      ...(anchor ? [['trustAnchor', 'true'] as [string, string]] : []),
    ],
  );
  expect(r.status).toBe(201);
  return r.json<{ keys: Array<Record<string, unknown>> }>().keys[0];
}

async function patchKey(a: Actor, kid: string, body: object) {
  const r = await fetch(`${app.url}/api/v3/admin/tenants/${a.tenant.tenantId}/keys/${kid}`, {
    method: 'PATCH',
    headers: { authorization: `Bearer ${a.user}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: r.status, body: (await r.json()) as Record<string, unknown> };
}

/** GET on the Core API's key paths with the workload token. */
async function coreKeys(a: Actor, path: string) {
  const r = await fetch(`${app.url}/api/v3/crypto/keys${path}`, {
    headers: { authorization: `Bearer ${a.workload}` },
  });
  return { status: r.status, body: (await r.json()) as Record<string, unknown> };
}

const signersOf = (jws: Jws) => protectedOf(jws).kw_signers as OriginalSigner[];
const b64 = (file: string) => new X509Certificate(ssl.read(file)).raw.toString('base64');

beforeAll(async () => {
  app = await startTestApp();
  ssl = new OpenSslDir();
  makeKey(ssl, 'root-ca', 'ec-p256');
  makeKey(ssl, 'other-ca', 'ec-p256');
  outsider('alice', 'root-ca');
  outsider('bob', 'root-ca');
  outsider('carol', 'other-ca');
  archive = makeKey(ssl, 'archive-p384', 'ec-p384');
  own = makeKey(ssl, 'own-p256', 'ec-p256');
  actor = await makeActor(app, [
    ...PERMISSIONS,
    'admin.keys.update',
    'admin.keys.read',
    'crypto.keys.read',
    'admin.keys.export-public',
  ]);
  await importKey(app, actor, ssl, archive);
  await importKey(app, actor, ssl, own);
  data = randomBytes(40_000);
  ssl.write('data.bin', data);
});

afterAll(async () => {
  ssl.cleanup();
  await app.stop();
});

describe('outside signers', () => {
  it('when the tenant has no archive signing key, then a mail by an outsider answers cms-key-not-imported naming the way out', async () => {
    const r = await convert(app, actor.user, sign('alice'));
    expect(r.status).toBe(404);
    expect(r.json()).toMatchObject({
      type: expect.stringMatching(/\/problems\/cms-key-not-imported$/),
      detail: expect.stringMatching(/archiveSigning/),
    });
  });

  it('when a signing key is made the archive signing key, then the key record says so; a value that is not a boolean is refused', async () => {
    const r = await patchKey(actor, archive.kid, { archiveSigning: true });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ kid: archive.kid, archiveSigning: true, trustAnchor: false });
    const bad = await patchKey(actor, archive.kid, { archiveSigning: 'yes' });
    expect(bad.status).toBe(400);
  });

  it("when the metadata is {}, then the archive key signs and the protected header records the outsider's certificate, signing time and digest", async () => {
    const r = await convert(app, actor.user, sign('alice', ['-md', 'sha384']));
    expect(r.status).toBe(200);
    const jws = r.json<Jws>();
    const header = protectedOf(jws);
    // The alg follows the archive key (P-384), not the CMS digest.
    expect(header).toMatchObject({ alg: 'ES384', kid: `${archive.kid}#1`, b64: false });
    expect(header.x5c).toBeUndefined();
    const [signer] = signersOf(jws);
    expect(signer).toMatchObject({ digestAlg: 'sha384', verified: 'signature' });
    expect(signer.x5c[0]).toBe(b64('alice.crt'));
    expect(Date.parse(signer.signingTime!)).toBeGreaterThan(Date.now() - 3_600_000);
    await flattenedVerify({ ...jws, payload: data }, publicOf(archive));
  });

  it('when verify is chain and no trust anchor leads to the signer, then cms-signer-untrusted; with the CA imported as an anchor, the chain is recorded', async () => {
    const untrusted = await convert(app, actor.user, sign('alice'), { verify: 'chain' });
    expect(untrusted.status).toBe(422);
    expect(untrusted.json().type).toMatch(/\/problems\/cms-signer-untrusted$/);

    const ca = await importCertificate(actor, 'root-ca.crt', true);
    expect(ca).toMatchObject({ usage: 'verify' });
    // Its admin public view names the usage it has (the hand-written document allowed only encrypt and sign).
    const view = await fetch(
      `${app.url}/api/v3/admin/tenants/${actor.tenant.tenantId}/keys/${ca.kid as string}/public`,
      { headers: { authorization: `Bearer ${actor.user}` } },
    );
    expect([view.status, await view.json()]).toEqual([
      200,
      expect.objectContaining({ usage: 'verify', usages: ['verify'] }),
    ]);
    const r = await convert(app, actor.user, sign('alice'), { verify: 'chain' });
    expect(r.status).toBe(200);
    const [signer] = signersOf(r.json<Jws>());
    expect(signer.verified).toBe('chain');
    expect(signer.x5c).toEqual([b64('alice.crt'), b64('root-ca.crt')]);
    await verifyDetached(r.json<Jws>(), data, publicOf(archive));

    // Another CA's outsider still leads to no anchor of this tenant.
    const other = await convert(app, actor.user, sign('carol'), { verify: 'chain' });
    expect(other.status).toBe(422);
    expect(other.json().type).toMatch(/\/problems\/cms-signer-untrusted$/);
  });

  it('when the file carries no certificate, then the signer is verified with a certificate imported to verify only', async () => {
    const file = sign('bob', ['-nocerts']);
    const before = await convert(app, actor.user, file);
    expect(before.status).toBe(404);
    expect(before.json().type).toMatch(/\/problems\/cms-key-not-imported$/);
    const bob = await importCertificate(actor, 'bob.crt');
    expect(bob).toMatchObject({ usage: 'verify' });
    // The Core API lists it and shows its public key as a verify key (answers checked against their schemas).
    const listed = (await coreKeys(actor, '?limit=500')).body.items as Array<
      Record<string, unknown>
    >;
    expect(listed.find((k) => k.kid === bob.kid)).toMatchObject({ usage: 'verify' });
    const shown = await coreKeys(actor, `/${bob.kid as string}`);
    expect([shown.status, shown.body.usage]).toEqual([200, 'verify']);
    const r = await convert(app, actor.user, file);
    expect(r.status).toBe(200);
    expect(signersOf(r.json<Jws>())[0].x5c[0]).toBe(b64('bob.crt'));
    await verifyDetached(r.json<Jws>(), data, publicOf(archive));

    // Its public view names the usage it has (the document once allowed only encrypt and sign there).
    const view = await fetch(
      `${app.url}/api/v3/admin/tenants/${actor.tenant.tenantId}/keys/${bob.kid as string}/public`,
      { headers: { authorization: `Bearer ${actor.user}` } },
    );
    expect(view.status).toBe(200);
    expect(await view.json()).toMatchObject({ usage: 'verify', usages: ['verify'] });

    // A verify-only key never signs: it cannot be the archive key, and as signerKid it is a usage mismatch.
    const notArchive = await patchKey(actor, bob.kid as string, { archiveSigning: true });
    expect(notArchive.body.type).toMatch(/\/problems\/invalid-transition$/);
    const misuse = await convert(app, actor.user, sign('alice'), { signerKid: bob.kid });
    expect(misuse.status).toBe(422);
    expect(misuse.json().type).toMatch(/\/problems\/key-usage-mismatch$/);
  });

  it('when the certificates the file carries name someone other than its signer, then cms-signer-certificate-mismatch', async () => {
    const file = sign('carol', ['-nocerts', '-certfile', 'alice.crt']);
    const r = await convert(app, actor.user, file);
    expect(r.status).toBe(422);
    expect(r.json().type).toMatch(/\/problems\/cms-signer-certificate-mismatch$/);
  });

  it('when two outsiders co-signed, then both are verified and recorded under one archive signature', async () => {
    const file = sign('alice', ['-signer', 'carol.crt', '-inkey', 'carol.key']);
    const r = await convert(app, actor.user, file);
    expect(r.status).toBe(200);
    const jws = r.json<Jws>();
    // SignerInfos is a DER SET OF: its order is the encodings' order, not the signing order.
    expect(
      signersOf(jws)
        .map((s) => s.x5c[0])
        .sort(),
    ).toEqual([b64('alice.crt'), b64('carol.crt')].sort());
    await verifyDetached(jws, data, publicOf(archive));
  });

  it('when analyze reads an outsider file, then it names how the signer is verified and which kid will sign', async () => {
    const r = await postRaw(app, ANALYZE, actor.user, sign('carol'), 'application/pkcs7-mime');
    expect(r.status).toBe(200);
    expect(r.json()).toMatchObject({
      convertible: true,
      signers: [{ verifiedWith: 'embedded-certificate', kid: null }],
      signing: { path: 'archive-key', kids: [archive.kid] },
    });
  });

  it("when signerKid names the tenant's own key, then the outsider is still verified with its certificate and that key signs", async () => {
    const r = await convert(app, actor.user, sign('carol'), { signerKid: own.kid });
    expect(r.status).toBe(200);
    const jws = r.json<Jws>();
    expect(protectedOf(jws)).toMatchObject({ alg: 'ES256', kid: `${own.kid}#1` });
    await verifyDetached(jws, data, publicOf(own));
  });
});

describe('several signers without an archive key', () => {
  it('when the tenant holds both signers, then the JWS is General JSON with one signature per key, each recording both signers', async () => {
    const second = await makeActor(app);
    const a = makeKey(ssl, 'cosigner-a', 'ec-p256');
    const b = makeKey(ssl, 'cosigner-b', 'rsa-2048');
    await importKey(app, second, ssl, a);
    await importKey(app, second, ssl, b, 'sign');
    const file = cms.sign(ssl, 'data.bin', {
      by: [a, b],
      binary: true,
      detached: false,
      outform: 'DER',
    });
    const r = await convert(app, second.user, file);
    expect(r.status).toBe(200);
    const general = r.json<{ signatures: Jws[] }>();
    expect(general.signatures).toHaveLength(2);
    const byKid = new Map(general.signatures.map((s) => [protectedOf(s).kid, s]));
    for (const k of [a, b]) {
      const s = byKid.get(`${k.kid}#1`)!;
      expect(signersOf(s)).toHaveLength(2);
      await flattenedVerify({ ...s, payload: data }, publicOf(k));
    }
  });
});
