import { randomBytes } from 'node:crypto';
import {
  ANALYZE,
  ANALYZE_ALIAS,
  CONVERT,
  OpenSslDir,
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
import type { Actor, Jws, TestApp, TestKey } from './helpers.ts';
import { cms } from '../../../support/fixtures/cms.ts';

let app: TestApp;
let ssl: OpenSslDir;
let actor: Actor;
let keys: Record<'rsa' | 'rsaSigner' | 'p256' | 'target', TestKey>;
let data: Buffer;

beforeAll(async () => {
  app = await startTestApp();
  ssl = new OpenSslDir();
  keys = {
    rsa: makeKey(ssl, 'mig-rsa', 'rsa-2048'),
    rsaSigner: makeKey(ssl, 'mig-rsa-signer', 'rsa-2048'),
    p256: makeKey(ssl, 'mig-p256', 'ec-p256'),
    target: makeKey(ssl, 'mig-target', 'rsa-2048'),
  };
  actor = await makeActor(app);
  // Their certificates have no keyUsage, so a key could do both: mig-rsa is narrowed to encrypt at
  // import (the analyze test needs a key that does not re-sign), mig-rsa-signer to sign.
  for (const k of Object.values(keys))
    await importKey(
      app,
      actor,
      ssl,
      k,
      k === keys.rsaSigner ? 'sign' : k === keys.rsa ? 'encrypt' : undefined,
    );
  data = randomBytes(150_000);
  ssl.write('data.bin', data);
});

afterAll(async () => {
  ssl.cleanup();
  await app.stop();
});

function sign(key: TestKey, args: string[], input = 'data.bin'): Buffer {
  return cms.sign(ssl, input, { by: key, binary: true, outform: 'DER', extra: args });
}

function encrypt(to: TestKey, args: string[], input = 'data.bin'): Buffer {
  return cms.encrypt(ssl, input, {
    to: { recip: to },
    binary: true,
    outform: 'DER',
    extra: args,
  });
}

describe('POST /api/v3/migration/stream/convert-pkcs7-to-jose with SignedData', () => {
  const cases = [
    { name: 'RSA in DER', key: 'rsaSigner', args: ['-nodetach'], alg: 'RS256' },
    { name: 'RSA in streamed BER', key: 'rsaSigner', args: ['-nodetach', '-stream'], alg: 'RS256' },
    {
      name: 'RSA-PSS with SHA-384',
      key: 'rsaSigner',
      args: ['-nodetach', '-md', 'sha384', '-keyopt', 'rsa_padding_mode:pss'],
      // The alg follows the signing key (SHA-256 for RSA), never the CMS digest.
      alg: 'PS256',
    },
    { name: 'ECDSA P-256 in DER', key: 'p256', args: ['-nodetach'], alg: 'ES256' },
    {
      name: 'ECDSA P-256 in streamed BER',
      key: 'p256',
      args: ['-nodetach', '-stream'],
      alg: 'ES256',
    },
  ] as const;
  for (const c of cases) {
    it(`when the CMS is ${c.name} and the metadata is {}, then 200 octet-stream with a ${c.alg} JWS that jose verifies over the original content`, async () => {
      const r = await convert(app, actor.user, sign(keys[c.key], [...c.args]));
      expect(r.status).toBe(200);
      expect(r.headers.get('content-type')).toBe('application/octet-stream');
      const jws = r.json<Jws>();
      expect(protectedOf(jws)).toMatchObject({
        alg: c.alg,
        kid: `${keys[c.key].kid}#1`,
        b64: false,
        crit: ['b64'],
      });
      expect(jws.header).toBeUndefined();
      await verifyDetached(jws, data, publicOf(keys[c.key]));
    });
  }

  it('when the SignedData is detached and the content comes as the third part, then the JWS names the kid in protected and verifies', async () => {
    for (const key of [keys.rsaSigner, keys.p256]) {
      const r = await convert(app, actor.user, sign(key, []), {}, data);
      expect(r.status).toBe(200);
      const jws = r.json<Jws>();
      expect(protectedOf(jws)).toMatchObject({ kid: `${key.kid}#1`, b64: false });
      await verifyDetached(jws, data, publicOf(key));
    }
  });

  it('when the metadata asks for b64 true and names the signerKid, then the JWS is RFC 7515 Appendix F with the kid protected and verifies', async () => {
    const r = await convert(app, actor.workload, sign(keys.p256, ['-nodetach']), {
      b64: true,
      signerKid: keys.p256.kid,
    });
    expect(r.status).toBe(200);
    const jws = r.json<Jws>();
    expect(protectedOf(jws)).toMatchObject({ alg: 'ES256', kid: `${keys.p256.kid}#1` });
    await verifyDetached(jws, data, publicOf(keys.p256));
  });

  it('when signerKid names a key that did not make the CMS signature, then the signer is verified with its own key and signerKid re-signs', async () => {
    const r = await convert(app, actor.workload, sign(keys.p256, ['-nodetach']), {
      signerKid: keys.rsaSigner.kid,
    });
    expect(r.status).toBe(200);
    const jws = r.json<Jws>();
    expect(protectedOf(jws)).toMatchObject({ alg: 'RS256', kid: `${keys.rsaSigner.kid}#1` });
    const [original] = protectedOf(jws).kw_signers as Array<{ x5c: string[] }>;
    expect(original.x5c[0]).toBe(keys.p256.certificate.toString('base64'));
    await verifyDetached(jws, data, publicOf(keys.rsaSigner));
  });

  it('when Accept prefers application/json, then the same JWS object is labelled application/json', async () => {
    const r = await convert(app, actor.user, sign(keys.rsaSigner, ['-nodetach']), {}, undefined, {
      accept: 'application/json',
    });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^application\/json/);
    await verifyDetached(r.json<Jws>(), data, publicOf(keys.rsaSigner));
  });
});

describe('POST /api/v3/migration/stream/convert-pkcs7-to-jose with EnvelopedData', () => {
  it('when the CMS is RSA key transport with AES-256-CBC, then multipart/mixed with an A256GCM JWE for the recipient key that jose decrypts to the content', async () => {
    for (const args of [['-aes-256-cbc'], ['-aes-256-cbc', '-stream']]) {
      const r = await convert(app, actor.user, encrypt(keys.rsa, args));
      expect(r.status).toBe(200);
      expect(r.headers.get('content-type')).toMatch(
        /^multipart\/mixed; boundary="----service-[0-9a-f-]{36}"$/,
      );
      const jwe = await openJwe(r, keys.rsa.privateKey);
      expect(jwe.closed).toBe(true);
      expect(jwe.parts.map((p) => p.contentType)).toEqual([
        'application/jose+json',
        'application/octet-stream',
      ]);
      expect(jwe.enc).toBe('A256GCM');
      expect(jwe.header.recipients[0].header).toEqual({
        alg: 'RSA-OAEP-256',
        kid: `${keys.rsa.kid}#1`,
      });
      expect(jwe.plaintext.equals(data)).toBe(true);
    }
  });

  it('when contentEncryption is preserve, then the CMS ciphertext is kept byte for byte as A256CBC-HS512 and jose decrypts it', async () => {
    const file = encrypt(keys.rsa, ['-aes-256-cbc']);
    const r = await convert(app, actor.user, file, { contentEncryption: 'preserve' });
    expect(r.status).toBe(200);
    const jwe = await openJwe(r, keys.rsa.privateKey);
    expect(jwe.enc).toBe('A256CBC-HS512');
    expect(jwe.plaintext.equals(data)).toBe(true);
    // The ciphertext is the CMS encryptedContent: its last bytes end the DER file.
    expect(file.includes(jwe.ciphertext.subarray(-4096))).toBe(true);
  });

  it('when targetKid names another key, then the JWE is for that key', async () => {
    const r = await convert(app, actor.user, encrypt(keys.rsa, ['-aes-128-cbc']), {
      targetKid: keys.target.kid,
    });
    const jwe = await openJwe(r, keys.target.privateKey);
    expect(jwe.enc).toBe('A128GCM');
    expect(jwe.header.recipients[0].header.kid).toBe(`${keys.target.kid}#1`);
    expect(jwe.plaintext.equals(data)).toBe(true);
  });

  it('when the EnvelopedData holds a SignedData (cms -sign | cms -encrypt), then a third part carries a JWS over the inner content', async () => {
    ssl.write('signed.der', sign(keys.p256, ['-nodetach']));
    const r = await convert(app, actor.user, encrypt(keys.rsa, ['-aes-256-cbc'], 'signed.der'));
    expect(r.status).toBe(200);
    const jwe = await openJwe(r, keys.rsa.privateKey);
    expect(jwe.closed).toBe(true);
    expect(jwe.parts.map((p) => p.contentType)).toEqual([
      'application/jose+json',
      'application/octet-stream',
      'application/jose+json',
    ]);
    expect(jwe.plaintext.equals(data)).toBe(true);
    await verifyDetached(JSON.parse(jwe.parts[2].body.toString()), data, publicOf(keys.p256));
  });

  it('when the input is several MiB, then the answer streams past the pre-buffer and still decrypts whole', async () => {
    const big = randomBytes(6 * 1024 * 1024 + 3);
    ssl.write('big.bin', big);
    const r = await convert(
      app,
      actor.workload,
      encrypt(keys.rsa, ['-aes-256-cbc', '-stream'], 'big.bin'),
    );
    expect(r.status).toBe(200);
    expect(r.headers.get('content-length')).toBeNull();
    const jwe = await openJwe(r, keys.rsa.privateKey);
    expect(jwe.closed).toBe(true);
    expect(jwe.plaintext.equals(big)).toBe(true);
  });

  it('when X-Response-Content-Type selects application/octet-stream for an enveloped input, then 406 before any output', async () => {
    const r = await convert(app, actor.user, encrypt(keys.rsa, ['-aes-256-cbc']), {}, undefined, {
      'x-response-content-type': 'application/octet-stream',
    });
    expect(r.status).toBe(406);
    expect(r.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    const ok = await convert(app, actor.user, encrypt(keys.rsa, ['-aes-256-cbc']), {}, undefined, {
      'x-response-content-type': 'multipart/mixed',
    });
    expect(ok.status).toBe(200);
    const bad = await convert(app, actor.user, encrypt(keys.rsa, ['-aes-256-cbc']), {}, undefined, {
      'x-response-content-type': 'text/plain',
    });
    expect(bad.status).toBe(400);
  });
});

describe('POST analyze-pkcs7', () => {
  it('when a SignedData is sent as the raw body, then the JSON names the type, encoding, signer, its imported kid and convertible', async () => {
    const r = await postRaw(
      app,
      ANALYZE,
      actor.user,
      sign(keys.rsaSigner, ['-nodetach', '-stream']),
      'application/pkcs7-mime',
    );
    expect(r.status).toBe(200);
    const a = r.json();
    // Convertible: the signer's key is imported for signing, so it re-signs.
    expect(a).toMatchObject({
      contentType: 'signedData',
      encoding: 'ber',
      contentLength: data.length,
      detached: false,
      convertible: true,
      recipients: [],
    });
    const signers = a.signers as Array<Record<string, unknown>>;
    expect(signers).toHaveLength(1);
    expect(signers[0]).toMatchObject({
      kid: keys.rsaSigner.kid,
      signedAttributes: true,
      digestAlgorithm: { oid: '2.16.840.1.101.3.4.2.1' },
    });
    expect(a.signing).toEqual({ path: 'signer-key', kids: [keys.rsaSigner.kid] });
    expect((signers[0].certificate as Record<string, string>).subject).toContain(
      keys.rsaSigner.kid,
    );

    // The same form by a certificate imported for encryption only: nothing of the tenant re-signs.
    const enc = await postRaw(
      app,
      ANALYZE,
      actor.user,
      sign(keys.rsa, ['-nodetach']),
      'application/pkcs7-mime',
    );
    expect(enc.json()).toMatchObject({
      convertible: false,
      reason: expect.stringMatching(/no key to re-sign with/),
      signing: { path: 'signer-key', kids: [] },
    });
  });

  it('when an EnvelopedData is sent as the file part, then the JSON names the recipient, its kid and the content encryption', async () => {
    const r = await postParts(app, ANALYZE, actor.workload, [
      ['file', { data: encrypt(keys.rsa, ['-aes-256-cbc']) }],
    ]);
    expect(r.status).toBe(200);
    const a = r.json();
    expect(a).toMatchObject({
      contentType: 'envelopedData',
      encoding: 'der',
      convertible: true,
      signers: [],
      contentEncryption: { oid: '2.16.840.1.101.3.4.1.42' },
    });
    expect((a.recipients as Array<Record<string, unknown>>)[0]).toMatchObject({
      type: 'keyTransport',
      kid: keys.rsa.kid,
    });
  });

  it('when the unversioned alias is called, then it answers the same analysis', async () => {
    const r = await postRaw(
      app,
      ANALYZE_ALIAS,
      actor.user,
      sign(keys.p256, []),
      'application/octet-stream',
    );
    expect(r.status).toBe(200);
    expect(r.json()).toMatchObject({
      contentType: 'signedData',
      detached: true,
      contentLength: 0,
      convertible: true,
    });
    expect(
      (await postRaw(app, ANALYZE_ALIAS, '', sign(keys.p256, []), 'application/octet-stream'))
        .status,
    ).toBe(401);
  });

  it('when the signature of a SignedData does not match its content, then analyze says it checked no signature, and convert refuses it', async () => {
    // Regression: convertible true stood alone for a file whose signature fails.
    const file = sign(keys.rsaSigner, ['-nodetach']);
    const at = file.indexOf(data.subarray(1000, 1032));
    file[at] ^= 0x01;
    const r = await postRaw(app, ANALYZE, actor.user, file, 'application/pkcs7-mime');
    expect(r.status).toBe(200);
    expect(r.json()).toMatchObject({ convertible: true, signatureChecked: false });
    const c = await convert(app, actor.user, file, {});
    expect(c.status).toBe(422);
    expect(c.json().type).toMatch(/\/problems\/cms-signature-invalid$/);
  });

  it('when a signer key is imported right after a conversion found none, then the next conversion finds it at once', async () => {
    const late = makeKey(ssl, 'mig-late-signer', 'rsa-2048');
    const file = sign(late, ['-nodetach']);
    const before = await convert(app, actor.user, file);
    expect(before.status).toBe(404);
    // The miss is remembered for the next messages; the import is a change that forgets it.
    await importKey(app, actor, ssl, late, 'sign');
    const after = await convert(app, actor.user, file);
    expect(after.status).toBe(200);
    expect(protectedOf(after.json() as Jws).kid).toBe('mig-late-signer#1');
  });

  it('when a key of the file is not imported, then convertible is false with the reason', async () => {
    const other = makeKey(ssl, 'not-imported', 'ec-p256');
    const r = await postRaw(
      app,
      ANALYZE,
      actor.user,
      sign(other, ['-nodetach']),
      'application/pkcs7-mime',
    );
    expect(r.json()).toMatchObject({
      convertible: false,
      reason: expect.stringMatching(/^no key to re-sign with/),
    });
  });
});

describe('the conversion log and audit', () => {
  it('when a conversion ends, then one log line gives bytes, duration and MB/s, and the audit has the event with actor and outcome', async () => {
    await convert(app, actor.user, sign(keys.rsaSigner, ['-nodetach']));
    const line = app
      .logText()
      .split('\n')
      .reverse()
      .find((l) => l.includes('"op":"migration.convert"'));
    expect(line).toBeDefined();
    expect(JSON.parse(line!)).toMatchObject({
      outcome: 'success',
      tenantId: actor.tenant.tenantId,
      bytesIn: expect.any(Number),
      bytesOut: expect.any(Number),
      ms: expect.any(Number),
      mbps: expect.any(Number),
    });
    await app.ctx.audit.flush();
    const rows = await app.ctx
      .db('audit_events')
      .where({ tenant_id: actor.tenant.tenantId, action: 'migration.convert' });
    expect(rows.length).toBeGreaterThan(0);
    expect(rows[0].actor).toMatch(/^user:/);
    expect(rows.some((r) => r.outcome === 'success')).toBe(true);
  });

  it('when the path exists but the method does not, then 405 with Allow', async () => {
    const r = await fetch(`${app.url}${CONVERT}`, {
      headers: { authorization: `Bearer ${actor.user}` },
    });
    expect(r.status).toBe(405);
    expect(r.headers.get('allow')).toBe('POST');
  });
});

describe('who verifies the CMS signature', () => {
  it('when the message embeds a look-alike certificate (same issuer and serial, another key), then 422: the imported key verifies, not the message', async () => {
    const serial = ssl
      .run(['x509', '-in', keys.rsaSigner.certFile, '-noout', '-serial'])
      .toString()
      .trim()
      .split('=')[1];
    ssl.run([
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      'evil.key',
      '-out',
      'evil.crt',
      '-subj',
      '/CN=mig-rsa-signer/O=Keyward Tests',
      '-set_serial',
      `0x${serial}`,
      '-days',
      '30',
    ]);
    const forged = cms.sign(ssl, 'data.bin', {
      by: { certFile: 'evil.crt', keyFile: 'evil.key' },
      detached: false,
      binary: true,
      outform: 'DER',
    });
    const r = await convert(app, actor.user, forged);
    expect(r.status).toBe(422);
    expect(r.json().type).toMatch(/\/problems\/cms-signature-invalid$/);
  });
});
