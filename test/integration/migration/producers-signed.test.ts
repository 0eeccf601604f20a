/**
 * Signed forms of other producers, converted with `{}` by the tenant's archive signing
 * key (the alg follows the signing key, never the input's digest): an RFC 3161
 * time-stamp token made by `openssl ts` with a P-256 key over SHA-384 and no certificates; an
 * Authenticode signature by osslsigncode (PKCS#7 v1.5 content that is not an OCTET STRING, signed
 * over its DER value, RFC 2315 section 9.3); a jar signature block by jarsigner (detached, over
 * the .SF file). Every JWS is checked with jose against the bytes the producer signed.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
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
} from './helpers.ts';
import type { Actor, Jws, TestApp, TestKey } from './helpers.ts';

let app: TestApp;
let ssl: OpenSslDir;
let actor: Actor;
let archive: TestKey;

/** Runs a producer in the test directory. */
const run = (cmd: string, args: string[]) =>
  execFileSync(cmd, args, { cwd: ssl.dir, stdio: ['ignore', 'pipe', 'pipe'] });

const TSA_CONFIG = `[ tsa ]
default_tsa = tsa_config1
[ tsa_config1 ]
serial = ./tsaserial
signer_digest = sha384
default_policy = 1.2.3.4.1
digests = sha256, sha384, sha512
ess_cert_id_alg = sha256
accuracy = secs:1
ordering = no
tsa_name = no
ess_cert_id_chain = no
`;

beforeAll(async () => {
  app = await startTestApp();
  ssl = new OpenSslDir();
  archive = makeKey(ssl, 'ts-archive', 'rsa-2048');
  actor = await makeActor(app, [...PERMISSIONS, 'admin.keys.update']);
  await importKey(app, actor, ssl, archive, 'sign');
  const r = await fetch(
    `${app.url}/api/v3/admin/tenants/${actor.tenant.tenantId}/keys/${archive.kid}`,
    {
      method: 'PATCH',
      headers: { authorization: `Bearer ${actor.user}`, 'content-type': 'application/json' },
      body: JSON.stringify({ archiveSigning: true }),
    },
  );
  expect(r.status).toBe(200);
});

afterAll(async () => {
  ssl.cleanup();
  await app.stop();
});

describe('time-stamp token by openssl ts', () => {
  it('when a P-256 TSA signed over SHA-384 without certificates, then {} converts with the archive key and the JWS covers the TSTInfo', async () => {
    ssl.write('ts.cnf', Buffer.from(TSA_CONFIG));
    ssl.write('tsaserial', Buffer.from('01\n'));
    ssl.write('stamped.bin', randomBytes(5000));
    ssl.run([
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-keyout',
      'tsa.key',
      '-out',
      'tsa.crt',
      '-subj',
      '/CN=Time Stamping Authority',
      '-days',
      '30',
      '-addext',
      'extendedKeyUsage=critical,timeStamping',
    ]);
    ssl.run(['ts', '-query', '-data', 'stamped.bin', '-sha384', '-no_nonce', '-out', 'q.tsq']);
    ssl.run([
      'ts',
      '-reply',
      '-config',
      'ts.cnf',
      '-queryfile',
      'q.tsq',
      '-signer',
      'tsa.crt',
      '-inkey',
      'tsa.key',
      '-token_out',
      '-out',
      'token.der',
    ]);
    // The bytes the TSA signed: the TSTInfo, the token's eContent.
    ssl.run([
      'cms',
      '-verify',
      '-inform',
      'DER',
      '-in',
      'token.der',
      '-certfile',
      'tsa.crt',
      '-noverify',
      '-binary',
      '-out',
      'tstinfo.der',
    ]);
    const token = ssl.read('token.der');

    // No certificate in the token: the TSA's is imported to verify only.
    const before = await convert(app, actor.user, token);
    expect(before.status).toBe(404);
    const imported = await postParts(
      app,
      `/api/v3/admin/tenants/${actor.tenant.tenantId}/keys/import-keystore`,
      actor.user,
      [['keystore', { data: ssl.read('tsa.crt'), type: 'application/x-pem-file' }]],
    );
    expect(imported.status).toBe(201);

    const r = await convert(app, actor.user, token);
    expect(r.status).toBe(200);
    const jws = r.json<Jws>();
    expect(protectedOf(jws)).toMatchObject({ alg: 'RS256', kid: `${archive.kid}#1` });
    expect(protectedOf(jws).kw_signers).toMatchObject([
      { digestAlg: 'sha384', verified: 'signature' },
    ]);
    await flattenedVerify({ ...jws, payload: ssl.read('tstinfo.der') }, publicOf(archive));
  });
});

describe('code signing', () => {
  it('when osslsigncode signed a script, then the SpcIndirectDataContent value is what the JWS covers', async () => {
    ssl.write('script.ps1', Buffer.from('Write-Host "archived"\r\n'));
    const cs = makeKey(ssl, 'authenticode', 'rsa-2048');
    run('osslsigncode', [
      'sign',
      '-certs',
      cs.certFile,
      '-key',
      cs.keyFile,
      '-in',
      'script.ps1',
      '-out',
      'signed.ps1',
    ]);
    run('osslsigncode', ['extract-signature', '-in', 'signed.ps1', '-out', 'authenticode.p7']);
    const p7 = ssl.read('authenticode.p7');
    // The signed bytes: the value of the SEQUENCE inside eContent [0] (RFC 2315 section 9.3).
    const asn = ssl.run(['asn1parse', '-inform', 'DER', '-in', 'authenticode.p7']).toString();
    const line = asn.split('\n').find((l) => /d=5 +hl=(\d+) l= *(\d+) cons: SEQUENCE/.test(l))!;
    const [, off, hl, len] = /^ *(\d+):d=5 +hl=(\d+) l= *(\d+)/.exec(line)!.map(Number);
    const signed = p7.subarray(off + hl, off + hl + len);

    const analysis = await postRaw(app, ANALYZE, actor.user, p7, 'application/pkcs7-mime');
    expect(analysis.json()).toMatchObject({
      contentLength: signed.length,
      innerContentType: { oid: '1.3.6.1.4.1.311.2.1.4' },
      convertible: true,
    });
    const r = await convert(app, actor.user, p7);
    expect(r.status).toBe(200);
    const jws = r.json<Jws>();
    expect(protectedOf(jws).kw_signers).toMatchObject([{ verified: 'signature' }]);
    await flattenedVerify({ ...jws, payload: signed }, publicOf(archive));
  });

  it('when jarsigner signed a jar, then its detached signature block converts over the .SF file', async () => {
    ssl.write('a.txt', Buffer.from('inside the jar\n'));
    run('jar', ['cf', 'app.jar', 'a.txt']);
    run('keytool', [
      '-genkeypair',
      '-keystore',
      'jar.p12',
      '-storetype',
      'PKCS12',
      '-storepass',
      'changeit',
      '-alias',
      'signer',
      '-keyalg',
      'EC',
      '-groupname',
      'secp256r1',
      '-dname',
      'CN=jarsigner',
      '-validity',
      '30',
    ]);
    run('jarsigner', ['-keystore', 'jar.p12', '-storepass', 'changeit', 'app.jar', 'signer']);
    const block = run('unzip', ['-p', 'app.jar', 'META-INF/SIGNER.EC']);
    const sf = run('unzip', ['-p', 'app.jar', 'META-INF/SIGNER.SF']);
    const r = await convert(app, actor.user, block, {}, sf);
    expect(r.status).toBe(200);
    const jws = r.json<Jws>();
    expect(protectedOf(jws).kw_signers).toMatchObject([{ verified: 'signature' }]);
    await flattenedVerify({ ...jws, payload: sf }, publicOf(archive));
  });
});

describe('bad v1.5 content', () => {
  it('when a v1.5 content that is not an OCTET STRING has no length, then cms-content-indefinite at once, before its 100 MB are read', async () => {
    // ContentInfo(signedData) [0] SignedData with eContent [0] SEQUENCE of indefinite length,
    // sent as a stream that would go on for 100 MB.
    const head = Buffer.from(
      '3080' +
        '06092a864886f70d010702' +
        'a080' +
        '3080' +
        '020101' +
        '3100' +
        '3080' +
        '060a2b060104018237020104' +
        'a080' +
        '3080',
      'hex',
    );
    let sent = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(c) {
        if (sent === 0) c.enqueue(head);
        else if (sent < 100 * 1024 * 1024) c.enqueue(new Uint8Array(1024 * 1024).fill(0x05));
        else return c.close();
        sent += sent === 0 ? head.length : 1024 * 1024;
      },
    });
    const res = await fetch(`${app.url}/api/v3/migration/stream/analyze-pkcs7`, {
      method: 'POST',
      headers: { authorization: `Bearer ${actor.user}`, 'content-type': 'application/pkcs7-mime' },
      body,
      duplex: 'half',
    } as RequestInit);
    expect(res.status).toBe(415);
    expect(((await res.json()) as { type: string }).type).toMatch(
      /\/problems\/cms-content-indefinite$/,
    );
    expect(sent).toBeLessThan(100 * 1024 * 1024);
  });
});

describe('certificates-only SignedData', () => {
  it('when a .p7b made by openssl crl2pkcs7 is analysed and converted, then it is named and answers a JWK Set of its certificates with x5c', async () => {
    const a = makeKey(ssl, 'p7b-a', 'ec-p256');
    const b = makeKey(ssl, 'p7b-b', 'rsa-2048');
    const p7b = ssl.run([
      'crl2pkcs7',
      '-nocrl',
      '-certfile',
      a.certFile,
      '-certfile',
      b.certFile,
      '-outform',
      'DER',
    ]);
    const analysis = await postRaw(app, ANALYZE, actor.user, p7b, 'application/pkcs7-mime');
    expect(analysis.json()).toMatchObject({
      certificatesOnly: true,
      certificateCount: 2,
      convertible: true,
    });
    const r = await convert(app, actor.user, p7b);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^application\/jwk-set\+json/);
    const set = r.json<{ keys: Array<{ kty: string; x5c: string[] }> }>();
    expect(set.keys.map((k) => k.kty)).toEqual(['EC', 'RSA']);
    expect(set.keys.map((k) => k.x5c[0])).toEqual([
      a.certificate.toString('base64'),
      b.certificate.toString('base64'),
    ]);
    // The JWKs are the certificates' keys, as jose reads them.
    const { importJWK, exportSPKI } = await import('jose');
    const spki = await exportSPKI(
      (await importJWK(set.keys[0], 'ES256')) as Parameters<typeof exportSPKI>[0],
    );
    expect(spki.trim()).toBe(String(publicOf(a).export({ format: 'pem', type: 'spki' })).trim());
  });
});
