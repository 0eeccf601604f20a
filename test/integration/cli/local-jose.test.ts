/**
 * `keyward open` and `keyward verify <jws> --content --cert`, the CLI's local checks of
 * migration outputs on jose (a child process, as a user runs it): results made by the engine
 * from openssl inputs open with PEM, PKCS#12 and JWK keys, a JWS part verifies with --cert, and
 * a wrong key or altered content exits 4.
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { convertPkcs7ToJose } from '../../../shared/pkcs7/index.ts';
import { flattenedJwe } from '../../../api/services/migration/json-jwe.ts';
import {
  OpenSslDir,
  chunked,
  collect,
  makeKey,
  resolverFor,
  type TestKey,
} from '../../../support/fixtures/pkcs7.ts';
import { cms } from '../../../support/fixtures/cms.ts';

const root = new URL('../../../', import.meta.url).pathname;

function cli(args: string[], env: Record<string, string> = {}) {
  return new Promise<{ code: number | null; stdout: Buffer; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, [join(root, 'bin/keyward.js'), ...args], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => out.push(c));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.once('close', (code) => resolve({ code, stdout: Buffer.concat(out), stderr }));
  });
}

let ssl: OpenSslDir;
let rsa: TestKey;
let other: TestKey;
let signer: TestKey;
const TEXT = Buffer.from('an archived contract\n'.repeat(500));

async function convert(file: Buffer, withContent = false) {
  const r = await convertPkcs7ToJose(chunked(file, 4096), {
    metadata: {},
    resolver: resolverFor([rsa, signer]),
    withContent,
  });
  return { contentType: r.contentType, body: await collect(r.body), result: r };
}

beforeAll(() => {
  ssl = new OpenSslDir();
  rsa = makeKey(ssl, 'open-rsa', 'rsa-2048');
  other = makeKey(ssl, 'open-other', 'rsa-2048');
  signer = makeKey(ssl, 'open-signer', 'ec-p256');
  ssl.write('text.txt', TEXT);
});

afterAll(() => ssl.cleanup());

describe('keyward open', () => {
  it('when a stored multipart JWE is opened with the PEM, PKCS#12 or JWK key, then the plaintext comes out', async () => {
    const enc = cms.encrypt(ssl, 'text.txt', { to: rsa, cipher: 'aes256', binary: true });
    const { body } = await convert(enc);
    const result = ssl.write('doc.p7m.jwe', body);
    ssl.run([
      'pkcs12',
      '-export',
      '-inkey',
      rsa.keyFile,
      '-in',
      rsa.certFile,
      '-out',
      'rsa.p12',
      '-passout',
      'pass:p12-secret',
    ]);
    ssl.write('rsa.jwk', Buffer.from(JSON.stringify(rsa.privateKey.export({ format: 'jwk' }))));
    // The PKCS#12 password comes from the environment: no secret is ever an argument.
    for (const args of [
      ['--key', ssl.path(rsa.keyFile)],
      ['--key', ssl.path('rsa.p12')],
      ['--key', ssl.path('rsa.jwk')],
    ]) {
      const r = await cli(['open', result, ...args], { KEYWARD_KEY_PASSWORD: 'p12-secret' });
      expect([args[1], r.code, r.stderr]).toEqual([args[1], 0, '']);
      expect(r.stdout.equals(TEXT)).toBe(true);
    }
    // keys import's name for the same password works here too.
    const other_name = await cli(['open', result, '--key', ssl.path('rsa.p12')], {
      KEYWARD_KEYSTORE_PASSWORD: 'p12-secret',
    });
    expect([other_name.code, other_name.stderr]).toEqual([0, '']);
    expect(other_name.stdout.equals(TEXT)).toBe(true);
    const wrong = await cli(['open', result, '--key', ssl.path(other.keyFile)]);
    expect(wrong.code).toBe(4);
    expect(wrong.stdout.length).toBe(0);
  });

  it("when the key is not the one the JWE is for, then the message names the JWE's kids and the key given", async () => {
    // Regression: an EC key given for an RSA recipient said "Invalid key type" and nothing more.
    const enc = cms.encrypt(ssl, 'text.txt', { to: rsa, cipher: 'aes256', binary: true });
    const result = ssl.write('for-rsa.jwe', (await convert(enc)).body);
    const ec = await cli(['open', result, '--key', ssl.path(signer.keyFile)]);
    expect(ec.code).toBe(4);
    expect(ec.stderr).toContain('the JWE is for kid open-rsa#1');
    expect(ec.stderr).toContain(`the key given is ${ssl.path(signer.keyFile)}, an EC prime256v1`);
    const rsaOther = await cli(['open', result, '--key', ssl.path(other.keyFile)]);
    expect(rsaOther.stderr).toMatch(
      /the JWE is for kid open-rsa#1; the key given is .*an RSA 2048-bit private key/,
    );
  });

  it('when mail to two mailboxes the tenant holds is converted with {}, then either key opens the result', async () => {
    const enc = cms.encrypt(ssl, 'text.txt', { to: [rsa, other], cipher: 'aes256', binary: true });
    const r = await convertPkcs7ToJose(chunked(enc, 4096), {
      metadata: {},
      resolver: resolverFor([rsa, other]),
    });
    const result = ssl.write('two.jwe', await collect(r.body));
    for (const k of [rsa, other]) {
      const out = await cli(['open', result, '--key', ssl.path(k.keyFile)]);
      expect([k.kid, out.code, out.stderr]).toEqual([k.kid, 0, '']);
      expect(out.stdout.equals(TEXT)).toBe(true);
    }
    const none = await cli(['open', result, '--key', ssl.path(signer.keyFile)]);
    expect(none.stderr).toContain('the JWE is for kids open-rsa#1, open-other#1');
  });

  it('when the result is the flattened JSON JWE, then it opens too', async () => {
    const enc = cms.encrypt(ssl, 'text.txt', { to: rsa, cipher: 'aes128', binary: true });
    const r = await convertPkcs7ToJose(chunked(enc, 4096), {
      metadata: {},
      resolver: resolverFor([rsa]),
    });
    const json = ssl.write('doc.json', await flattenedJwe(r, 1 << 20));
    const out = await cli(['open', json, '--key', ssl.path(rsa.keyFile)]);
    expect(out.code).toBe(0);
    expect(out.stdout.equals(TEXT)).toBe(true);
  });

  it('when a signed-then-encrypted result is opened with --cert, then its JWS part is verified as well', async () => {
    ssl.write(
      'signed.bin',
      cms.sign(ssl, 'text.txt', { by: signer, detached: false, binary: true, outform: 'DER' }),
    );
    const enc = cms.encrypt(ssl, 'signed.bin', { to: rsa, cipher: 'aes256', binary: true });
    const result = ssl.write('nested.jwe', (await convert(enc)).body);
    const r = await cli([
      'open',
      result,
      '--key',
      ssl.path(rsa.keyFile),
      '--cert',
      ssl.path(signer.certFile),
    ]);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain('JWS part verifies: valid JWS (ES256');
    expect(r.stdout.equals(TEXT)).toBe(true);
  });

  it('when signed-then-encrypted mail is opened with --cert, then the JWS is checked over the signed MIME entity inside', async () => {
    ssl.write('mail.txt', Buffer.from('Content-Type: text/plain\r\n\r\nsee you at noon\r\n'));
    const clear = ssl.run([
      'smime',
      '-sign',
      '-in',
      'mail.txt',
      '-signer',
      signer.certFile,
      '-inkey',
      signer.keyFile,
    ]);
    ssl.write('clear.eml', clear);
    const enc = cms.encrypt(ssl, 'clear.eml', { to: rsa, cipher: 'aes256', binary: true });
    const result = ssl.write('mail.jwe', (await convert(enc)).body);
    const r = await cli([
      'open',
      result,
      '--key',
      ssl.path(rsa.keyFile),
      '--cert',
      ssl.path(signer.certFile),
    ]);
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(
      /JWS part verifies: valid JWS \(ES256, archive signature by open-signer#1\)/,
    );
    expect(r.stderr).toMatch(/original signer: CN=open-signer/);
  });
});

describe('keyward verify <jws> --content --cert', () => {
  it('when the JWS and the content a job stored are checked, then it is valid; altered content exits 4', async () => {
    const signed = cms.sign(ssl, 'text.txt', {
      by: signer,
      detached: false,
      binary: true,
      outform: 'DER',
    });
    const { body } = await convert(signed);
    const jws = ssl.write('doc.jws.json', body);
    const content = ssl.write('doc.content', TEXT);
    const ok = await cli([
      'verify',
      jws,
      '--content',
      content,
      '--cert',
      ssl.path(signer.certFile),
    ]);
    expect(ok.code).toBe(0);
    expect(ok.stdout.toString()).toMatch(
      /^valid JWS \(ES256, archive signature by open-signer#1\)\n {2}original signer: CN=open-signer, O=Keyward Tests; sha256; signed \d{4}-.*; verified: signature\n$/,
    );
    writeFileSync(content, Buffer.concat([TEXT, Buffer.from('x')]));
    const bad = await cli([
      'verify',
      jws,
      '--content',
      content,
      '--cert',
      ssl.path(signer.certFile),
    ]);
    expect(bad.code).toBe(4);
  });

  it('when the JWS is General JSON (two co-signers, each signing with its own key), then verify checks the signature of the given certificate', async () => {
    const cosigner = makeKey(ssl, 'open-cosigner', 'ec-p256');
    const signed = cms.sign(ssl, 'text.txt', {
      by: [signer, cosigner],
      binary: true,
      detached: false,
      outform: 'DER',
    });
    const r = await convertPkcs7ToJose(chunked(signed, 4096), {
      metadata: {},
      resolver: resolverFor([rsa, signer, cosigner]),
    });
    const body = await collect(r.body);
    expect(JSON.parse(body.toString()).signatures).toHaveLength(2);
    const jws = ssl.write('co.jws.json', body);
    const content = ssl.write('co.content', TEXT);
    const ok = await cli([
      'verify',
      jws,
      '--content',
      content,
      '--cert',
      ssl.path(cosigner.certFile),
    ]);
    expect(ok.code).toBe(0);
    expect(ok.stdout.toString()).toContain('archive signature by open-cosigner#1');
    expect(ok.stdout.toString().match(/original signer:/g)).toHaveLength(2);
  });

  it('when the archive signature is by an RSA-PSS or an Ed448 key (which jose 6 cannot read), then verify checks it with their certificates; the other key, or altered content, exits 4', async () => {
    const pss = makeKey(ssl, 'open-pss', 'rsa-pss-2048');
    const ed448 = makeKey(ssl, 'open-ed448', 'ed448');
    const signed = cms.sign(ssl, 'text.txt', {
      by: signer,
      detached: false,
      binary: true,
      outform: 'DER',
    });
    const content = ssl.write('algs.content', TEXT);
    for (const [key, alg, wrong] of [
      [pss, 'PS256', ed448],
      [ed448, 'EdDSA', pss],
    ] as const) {
      const r = await convertPkcs7ToJose(chunked(signed, 4096), {
        metadata: { signerKid: key.kid },
        resolver: resolverFor([signer, pss, ed448]),
      });
      const jws = ssl.write(`${key.kid}.jws.json`, await collect(r.body));
      const ok = await cli(['verify', jws, '--content', content, '--cert', ssl.path(key.certFile)]);
      expect(ok.code).toBe(0);
      expect(ok.stdout.toString()).toContain(
        `valid JWS (${alg}, archive signature by ${key.kid}#1)`,
      );
      const other = await cli([
        'verify',
        jws,
        '--content',
        content,
        '--cert',
        ssl.path(wrong.certFile),
      ]);
      expect(other.code).toBe(4);
    }
    writeFileSync(content, Buffer.concat([TEXT, Buffer.from('x')]));
    const altered = await cli([
      'verify',
      ssl.path('open-ed448.jws.json'),
      '--content',
      content,
      '--cert',
      ssl.path(ed448.certFile),
    ]);
    expect(altered.code).toBe(4);
  });
});
