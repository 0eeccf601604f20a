/**
 * The mailbox migrated to post-quantum JOSE: mail signed by an outside signer and encrypted to two
 * RSA mailboxes, converted to two X-Wing (ML-KEM-768 + X25519) recipients (HPKE-9-KE, General
 * JSON) with an ML-DSA-65 archive key signing the JWS; the ML-KEM + P-256 / P-384 hybrids
 * (HPKE-8, HPKE-10) take the same path. Every output is opened or verified by code
 * we did not write: the HPKE recipients by test/support/independent-hpke.ts (the @hpke packages),
 * the ML-DSA JWS and the AKP JWKs by jose. The recipients' private keys are read from the key
 * cache as a mailbox owner holds them: the service never exports them.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { calculateJwkThumbprint, flattenedVerify, importJWK } from 'jose';
import type { JWK } from 'jose';
import { deserializeMaterial } from '../../../shared/crypto/material-codec.ts';
import { api } from '../../../support/auth.ts';
import { openCompact, openJson } from '../../support/independent-hpke.ts';
import {
  OpenSslDir,
  PERMISSIONS,
  REENCRYPT,
  convert,
  importKey,
  makeActor,
  makeKey,
  parseMultipart,
  postRaw,
  protectedOf,
  startTestApp,
} from './helpers.ts';
import type { Actor, Answer, Jws, TestApp, TestKey } from './helpers.ts';

let app: TestApp;
let ssl: OpenSslDir;
let actor: Actor;
let rsa: Record<'alice' | 'bob', TestKey>;
let data: Buffer;
let mail: Buffer;
/** The data encrypted to one mailbox, unsigned. */
let plainMail: Buffer;

/** The hybrid seed (HPKE SerializePrivateKey) of a tenant key's version 1. */
async function seedOf(kid: string): Promise<Buffer> {
  const key = await app.ctx.keys.get(actor.tenant.tenantId, kid);
  return deserializeMaterial(key.material.get(1)!).secret!;
}

function partsOf(a: Answer) {
  const { parts, closed } = parseMultipart(a.body, a.headers.get('content-type')!);
  expect(closed).toBe(true);
  const header = JSON.parse(parts[0].body.toString()) as {
    protected: string;
    iv: string;
    recipients: { header: Record<string, string>; encrypted_key: string }[];
  };
  const body = parts[1].body;
  return {
    header,
    body: { ciphertext: body.subarray(0, body.length - 16), tag: body.subarray(body.length - 16) },
    jws: parts[2] ? (JSON.parse(parts[2].body.toString()) as Jws) : null,
  };
}

beforeAll(async () => {
  app = await startTestApp();
  ssl = new OpenSslDir();
  rsa = {
    alice: makeKey(ssl, 'pq-rsa-alice', 'rsa-2048'),
    bob: makeKey(ssl, 'pq-rsa-bob', 'rsa-2048'),
  };
  const outsider = makeKey(ssl, 'pq-outsider', 'ec-p256');
  actor = await makeActor(app, [
    ...PERMISSIONS,
    'admin.keys.create',
    'admin.keys.update',
    'crypto.keys.read',
  ]);
  await importKey(app, actor, ssl, rsa.alice, 'encrypt');
  await importKey(app, actor, ssl, rsa.bob, 'encrypt');
  const keys = `/api/v3/admin/tenants/${actor.tenant.tenantId}/keys`;
  for (const [kid, type, usage] of [
    ['pq-alice', 'x25519-ml-kem-768', 'encrypt'],
    ['pq-bob', 'x25519-ml-kem-768', 'encrypt'],
    ['pq-archive', 'ml-dsa-65', 'sign'],
    ['pq-p256', 'p256-ml-kem-768', 'encrypt'],
    ['pq-p384', 'p384-ml-kem-1024', 'encrypt'],
  ]) {
    const r = await api(app, 'POST', keys, actor.user, { kid, type, usage });
    if (r.status !== 201) throw new Error(`key ${kid}: ${JSON.stringify(r.body)}`);
  }
  const p = await api(app, 'PATCH', `${keys}/pq-archive`, actor.user, { archiveSigning: true });
  if (p.status !== 200) throw new Error(`archiveSigning: ${JSON.stringify(p.body)}`);
  data = Buffer.concat([Buffer.from('Subject: quarterly figures\r\n\r\n'), randomBytes(30_000)]);
  ssl.write('data.bin', data);
  // Signed by someone whose key the tenant does not hold, then encrypted to both mailboxes.
  ssl.write(
    'signed.der',
    ssl.run([
      'cms',
      '-sign',
      '-binary',
      '-nodetach',
      '-in',
      'data.bin',
      '-signer',
      outsider.certFile,
      '-inkey',
      outsider.keyFile,
      '-outform',
      'DER',
    ]),
  );
  mail = ssl.run([
    'cms',
    '-encrypt',
    '-binary',
    '-aes-256-cbc',
    '-in',
    'signed.der',
    '-outform',
    'DER',
    rsa.alice.certFile,
    rsa.bob.certFile,
  ]);
  plainMail = ssl.run([
    'cms',
    '-encrypt',
    '-binary',
    '-aes-256-cbc',
    '-in',
    'data.bin',
    '-outform',
    'DER',
    rsa.alice.certFile,
  ]);
});

afterAll(async () => {
  ssl.cleanup();
  await app.stop();
});

/** The CLI as a user runs it (a child process). */
function cli(args: string[]) {
  const root = new URL('../../../', import.meta.url).pathname;
  return new Promise<{ code: number | null; stdout: Buffer; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, [join(root, 'bin/keyward.js'), ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => out.push(c));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.once('close', (code) => resolve({ code, stdout: Buffer.concat(out), stderr }));
  });
}

describe('the mailbox migrated to post-quantum JOSE', () => {
  it('when the tenant publishes its keys, then the X-Wing keys are AKP JWKs of HPKE-9 and the ML-DSA key one of ML-DSA-65, each imported by jose with its thumbprint over alg, kty, pub', async () => {
    const r = await api(app, 'GET', '/api/v3/crypto/keys/pq-alice', actor.workload);
    expect(r.status).toBe(200);
    const jwk = (r.body as { versions: { jwk: JWK }[] }).versions[0].jwk;
    expect(jwk).toMatchObject({ kty: 'AKP', alg: 'HPKE-9', use: 'enc' });
    expect(Buffer.from(jwk.pub as string, 'base64url')).toHaveLength(1216);
    expect(await calculateJwkThumbprint(jwk)).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const dsa = await api(app, 'GET', '/api/v3/crypto/keys/pq-archive', actor.workload);
    const dsaJwk = (dsa.body as { versions: { jwk: JWK }[] }).versions[0].jwk;
    expect(dsaJwk).toMatchObject({ kty: 'AKP', alg: 'ML-DSA-65', use: 'sig' });
    await expect(importJWK(dsaJwk, 'ML-DSA-65')).resolves.toBeDefined();
  });

  it('when the signed mail to two RSA mailboxes is converted to the two X-Wing keys, then each opens the HPKE-9-KE General JSON JWE independently, and jose verifies the ML-DSA-65 archive JWS recording the outside signer', async () => {
    const r = await convert(app, actor.user, mail, { targetKid: ['pq-alice', 'pq-bob'] });
    expect(r.status).toBe(200);
    const { header, body, jws } = partsOf(r);
    expect(header.recipients.map((x) => [x.header.alg, x.header.kid])).toEqual([
      ['HPKE-9-KE', 'pq-alice#1'],
      ['HPKE-9-KE', 'pq-bob#1'],
    ]);
    for (const kid of ['pq-alice', 'pq-bob']) {
      const plain = await openJson(header, `${kid}#1`, await seedOf(kid), body);
      expect(plain.equals(data)).toBe(true);
    }
    expect(jws).not.toBeNull();
    const signed = protectedOf(jws!);
    expect(signed).toMatchObject({ alg: 'ML-DSA-65', kid: 'pq-archive#1' });
    expect(signed.kw_signers).toEqual([expect.objectContaining({ verified: 'signature' })]);
    const pub = await api(app, 'GET', '/api/v3/crypto/keys/pq-archive', actor.workload);
    const key = await importJWK(
      (pub.body as { versions: { jwk: JWK }[] }).versions[0].jwk,
      'ML-DSA-65',
    );
    const payload = signed.b64 === false ? data : data.toString('base64url');
    await flattenedVerify(
      { ...(jws as object), payload } as Parameters<typeof flattenedVerify>[0],
      key,
    );
  });

  it('when the targets mix an X-Wing key and an RSA key, then 422 jose-mixed-recipients; with allowMixedRecipients the protected header records the choice', async () => {
    const refused = await convert(app, actor.user, mail, { targetKid: ['pq-alice', rsa.bob.kid] });
    expect(refused.status).toBe(422);
    expect(refused.json()).toMatchObject({
      type: expect.stringMatching(/\/problems\/jose-mixed-recipients$/),
      postQuantum: ['pq-alice'],
      classical: [rsa.bob.kid],
    });
    const mixed = await convert(app, actor.user, mail, {
      targetKid: ['pq-alice', rsa.bob.kid],
      allowMixedRecipients: true,
    });
    expect(mixed.status).toBe(200);
    const { header, body } = partsOf(mixed);
    expect(JSON.parse(Buffer.from(header.protected, 'base64url').toString())).toMatchObject({
      keyward_mixed_recipients: true,
    });
    expect(
      (await openJson(header, 'pq-alice#1', await seedOf('pq-alice'), body)).equals(data),
    ).toBe(true);
  });

  it('when a classical result is re-encrypted by stream to an X-Wing key, then the answer is an HPKE-9-KE recipient the independent reader opens (the re-wrap a label change needs)', async () => {
    const classical = await convert(app, actor.user, mail, { targetKid: rsa.alice.kid });
    expect(classical.status).toBe(200);
    const r = await postRaw(
      app,
      `${REENCRYPT}?kid=pq-bob`,
      actor.workload,
      classical.body,
      classical.headers.get('content-type')!,
    );
    expect(r.status).toBe(200);
    const { header, body } = partsOf(r);
    expect(header.recipients[0].header).toMatchObject({ alg: 'HPKE-9-KE', kid: 'pq-bob#1' });
    expect((await openJson(header, 'pq-bob#1', await seedOf('pq-bob'), body)).equals(data)).toBe(
      true,
    );
  });

  it("when keyward open is given the result and a private AKP JWK of HPKE-9, then it writes the plaintext and verifies the ML-DSA-65 JWS part with the archive key's public AKP JWK", async () => {
    const r = await convert(app, actor.user, mail, { targetKid: ['pq-alice', 'pq-bob'] });
    expect(r.status).toBe(200);
    const pub = await api(app, 'GET', '/api/v3/crypto/keys/pq-bob', actor.workload);
    const bobJwk = (pub.body as { versions: { jwk: Record<string, string> }[] }).versions[0].jwk;
    const archive = await api(app, 'GET', '/api/v3/crypto/keys/pq-archive', actor.workload);
    const archiveJwk = (archive.body as { versions: { jwk: object }[] }).versions[0].jwk;
    const dir = ssl.path('');
    writeFileSync(join(dir, 'pq-result.mime'), r.body);
    writeFileSync(
      join(dir, 'pq-bob.jwk'),
      JSON.stringify({ ...bobJwk, priv: (await seedOf('pq-bob')).toString('base64url') }),
    );
    writeFileSync(join(dir, 'pq-archive.jwk'), JSON.stringify(archiveJwk));
    const out = await cli([
      'open',
      join(dir, 'pq-result.mime'),
      '--key',
      join(dir, 'pq-bob.jwk'),
      '--cert',
      join(dir, 'pq-archive.jwk'),
    ]);
    expect(out.stderr).toMatch(
      /JWS part verifies: valid JWS \(ML-DSA-65, archive signature by pq-archive#1\)/,
    );
    expect([out.code, out.stdout.equals(data)]).toEqual([0, true]);
  });

  it('when one X-Wing target is named and the caller asks for application/jose, then the answer is a compact HPKE-9 Integrated Encryption JWE (no enc, empty IV and tag) the independent reader opens; multipart/mixed keeps HPKE-9-KE', async () => {
    const accept = { accept: 'application/jose' };
    const r = await convert(
      app,
      actor.user,
      plainMail,
      { targetKid: 'pq-alice' },
      undefined,
      accept,
    );
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('application/jose');
    const compact = r.body.toString();
    const [h, ek, iv, , tag] = compact.split('.');
    expect(JSON.parse(Buffer.from(h, 'base64url').toString())).toEqual({
      alg: 'HPKE-9',
      kid: 'pq-alice#1',
    });
    expect([Buffer.from(ek, 'base64url').length, iv, tag]).toEqual([1120, '', '']);
    expect((await openCompact(compact, await seedOf('pq-alice'))).equals(data)).toBe(true);

    const streamed = await convert(app, actor.user, plainMail, { targetKid: 'pq-alice' });
    expect(streamed.status).toBe(200);
    const { header, body } = partsOf(streamed);
    expect(header.recipients[0].header).toMatchObject({ alg: 'HPKE-9-KE', kid: 'pq-alice#1' });
    expect(
      (await openJson(header, 'pq-alice#1', await seedOf('pq-alice'), body)).equals(data),
    ).toBe(true);
  });

  it('when the tenant publishes its ML-KEM + NIST curve hybrid keys, then they are AKP JWKs of HPKE-8 (pk_M || P-256 point, 1249 bytes) and HPKE-10 (pk_M || P-384 point, 1665 bytes)', async () => {
    for (const [kid, alg, length] of [
      ['pq-p256', 'HPKE-8', 1249],
      ['pq-p384', 'HPKE-10', 1665],
    ] as const) {
      const r = await api(app, 'GET', `/api/v3/crypto/keys/${kid}`, actor.workload);
      expect(r.status).toBe(200);
      const jwk = (r.body as { versions: { jwk: JWK }[] }).versions[0].jwk;
      expect(jwk).toMatchObject({ kty: 'AKP', alg, use: 'enc' });
      expect(Buffer.from(jwk.pub as string, 'base64url')).toHaveLength(length);
      expect(await calculateJwkThumbprint(jwk)).toMatch(/^[A-Za-z0-9_-]{43}$/);
    }
  });

  it('when the signed mail is converted to a P-256 and a P-384 hybrid key, then the General JSON JWE has an HPKE-8-KE and an HPKE-10-KE recipient, each opened independently', async () => {
    const r = await convert(app, actor.user, mail, { targetKid: ['pq-p256', 'pq-p384'] });
    expect(r.status).toBe(200);
    const { header, body } = partsOf(r);
    expect(header.recipients.map((x) => [x.header.alg, x.header.kid])).toEqual([
      ['HPKE-8-KE', 'pq-p256#1'],
      ['HPKE-10-KE', 'pq-p384#1'],
    ]);
    for (const kid of ['pq-p256', 'pq-p384']) {
      const plain = await openJson(header, `${kid}#1`, await seedOf(kid), body);
      expect(plain.equals(data)).toBe(true);
    }
  });

  it.each([
    ['pq-p256', 'HPKE-8', 1153],
    ['pq-p384', 'HPKE-10', 1665],
  ] as const)(
    'when one %s target is named with application/jose, then the answer is a compact %s Integrated Encryption JWE the independent reader opens',
    async (kid, alg, encLength) => {
      const r = await convert(app, actor.user, plainMail, { targetKid: kid }, undefined, {
        accept: 'application/jose',
      });
      expect(r.status).toBe(200);
      const compact = r.body.toString();
      const [h, ek, iv, , tag] = compact.split('.');
      expect(JSON.parse(Buffer.from(h, 'base64url').toString())).toEqual({ alg, kid: `${kid}#1` });
      expect([Buffer.from(ek, 'base64url').length, iv, tag]).toEqual([encLength, '', '']);
      expect((await openCompact(compact, await seedOf(kid))).equals(data)).toBe(true);
    },
  );

  it('when application/jose is asked for a result that has no compact form (two targets, a classical target, a JWS part), then 406 names the forms it has; contentEncryption with it is refused', async () => {
    const accept = { accept: 'application/jose' };
    for (const [file, metadata] of [
      [plainMail, { targetKid: ['pq-alice', 'pq-bob'] }],
      [plainMail, { targetKid: rsa.bob.kid }],
      [mail, { targetKid: 'pq-alice' }],
    ] as const) {
      const r = await convert(app, actor.user, file, metadata, undefined, accept);
      expect([r.status, r.json()]).toEqual([
        406,
        expect.objectContaining({ available: ['multipart/mixed', 'application/jose+json'] }),
      ]);
    }
    const r = await convert(
      app,
      actor.user,
      plainMail,
      { targetKid: 'pq-alice', contentEncryption: 'A128GCM' },
      undefined,
      accept,
    );
    expect(r.status).toBe(400);
  });
});
