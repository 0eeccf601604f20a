/**
 * Signed forms of other producers (issue 26): an RFC 3161 time-stamp token made by `openssl ts`
 * with a P-256 key over a SHA-384 digest and no certificates, converted with `{}` by the tenant's
 * archive signing key (contract 10: the alg follows the signing key, never the input's digest).
 * The JWS is checked with jose against the TSTInfo bytes the TSA signed.
 */
import { randomBytes } from 'node:crypto';
import { flattenedVerify } from 'jose';
import {
  OpenSslDir,
  PERMISSIONS,
  convert,
  importKey,
  makeActor,
  makeKey,
  postParts,
  protectedOf,
  publicOf,
  startTestApp,
} from './helpers.ts';
import type { Actor, Jws, TestApp, TestKey } from './helpers.ts';

let app: TestApp;
let ssl: OpenSslDir;
let actor: Actor;
let archive: TestKey;

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
