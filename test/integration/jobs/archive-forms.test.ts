/**
 * Archive forms through a queued batch: S/MIME as `openssl cms -encrypt`
 * writes it, `-outform PEM`, and clear-signed mail from `openssl cms -sign`, uploaded as they
 * are, and signed-then-encrypted mail (`-sign | -encrypt`), converted by a real worker process; the results are checked with jose against the
 * bytes each CMS object carries (the signed MIME entity for clear-signed mail).
 */
import { createPublicKey } from 'node:crypto';
import { flattenedDecrypt, flattenedVerify } from 'jose';
import {
  OpenSslDir,
  makeKey,
  parseMultipart,
  type TestKey,
} from '../../../support/fixtures/pkcs7.ts';
import { api } from '../../../support/auth.ts';
import {
  finished,
  result,
  spawnWorker,
  startJobsEnv,
  tenantWithKeys,
  upload,
  waitForJob,
  type JobBody,
  type JobsEnv,
  type WorkerChild,
} from './harness.ts';
import { cms } from '../../../support/fixtures/cms.ts';

let env: JobsEnv;
let ssl: OpenSslDir;
let rsa: TestKey;
let signer: TestKey;
let worker: WorkerChild;
let tenant: { tenantId: string; token: string };
const TEXT = Buffer.from(
  Array.from({ length: 5000 }, (_, i) => `mail line ${i}`).join('\n') + '\n',
);
const CANONICAL = Buffer.from(TEXT.toString().replace(/\n/g, '\r\n'));
const crlf = (b: Buffer) => Buffer.from(b.toString('latin1').replace(/\r?\n/g, '\r\n'), 'latin1');

beforeAll(async () => {
  ssl = new OpenSslDir();
  rsa = makeKey(ssl, 'jarc-rsa', 'rsa-2048');
  signer = makeKey(ssl, 'jarc-signer', 'rsa-2048');
  ssl.write('mail.txt', TEXT);
  env = await startJobsEnv();
  [tenant, worker] = await Promise.all([
    tenantWithKeys(env.app, ssl, [rsa, { ...signer, usage: 'sign' }]),
    spawnWorker(env.workerEnv()),
  ]);
});

afterAll(async () => {
  await worker?.stop();
  await env?.close();
  ssl?.cleanup();
});

async function opened(child: JobBody, parts3?: (jws: Buffer) => void): Promise<Buffer> {
  const r = await result(env.app, tenant.token, child.id);
  expect(r.status).toBe(200);
  const { parts, closed } = parseMultipart(r.body, r.contentType);
  if (parts3) parts3(parts[2].body);
  expect(closed).toBe(true);
  const jwe = JSON.parse(parts[0].body.toString());
  const ct = parts[1].body;
  const { plaintext } = await flattenedDecrypt(
    {
      protected: jwe.protected,
      header: jwe.recipients[0].header,
      encrypted_key: jwe.recipients[0].encrypted_key,
      iv: jwe.iv,
      ciphertext: ct.subarray(0, ct.length - 16).toString('base64url'),
      tag: ct.subarray(ct.length - 16).toString('base64url'),
    },
    rsa.privateKey,
  );
  return Buffer.from(plaintext);
}

describe('when a batch holds S/MIME, PEM and clear-signed files (real Redis, s3rver, worker)', () => {
  it('then each converts and its result verifies or opens with jose to what the CMS carries', async () => {
    const files: Record<string, Buffer> = {
      'mail-encrypted.eml': cms.encrypt(ssl, 'mail.txt', { to: rsa }),
      'armoured.pem': cms.encrypt(ssl, 'mail.txt', { to: rsa, cipher: 'aes256', outform: 'PEM' }),
      'clear-signed.eml': cms.sign(ssl, 'mail.txt', { by: signer }),
    };
    ssl.write('clear-signed.eml', files['clear-signed.eml']);
    files['signed-then-encrypted.eml'] = cms.encrypt(ssl, 'clear-signed.eml', {
      to: rsa,
      cipher: 'aes256',
    });
    for (const [name, bytes] of Object.entries(files))
      expect((await upload(env.app, tenant.token, `arc/${name}`, bytes)).status).toBe(201);
    const submit = await api(env.app, 'POST', '/api/v3/migration/jobs', tenant.token, {
      source: { prefix: 'arc/' },
      metadata: {},
      output: { prefix: 'arc-out/' },
    });
    expect(submit.status).toBe(202);
    const done = await waitForJob(env.app, tenant.token, String(submit.body.id), finished, 40_000);
    expect(done).toMatchObject({
      state: 'completed',
      progress: { objectsTotal: 4, objectsDone: 4, objectsFailed: 0 },
    });
    const children = await api(
      env.app,
      'GET',
      `/api/v3/migration/jobs/${submit.body.id}/children`,
      tenant.token,
    );
    const byName = new Map<string, JobBody>(
      (children.body.items as JobBody[]).map((c) => [c.source.key.slice(4), c]),
    );
    expect((await opened(byName.get('mail-encrypted.eml')!)).equals(CANONICAL)).toBe(true);
    expect((await opened(byName.get('armoured.pem')!)).equals(CANONICAL)).toBe(true);
    let jwsPart: Buffer = Buffer.alloc(0);
    const inner = await opened(byName.get('signed-then-encrypted.eml')!, (b) => (jwsPart = b));
    expect(inner.equals(crlf(files['clear-signed.eml']))).toBe(true);
    await expect(
      flattenedVerify(
        { ...JSON.parse(jwsPart.toString()), payload: CANONICAL },
        createPublicKey(signer.privateKey),
      ),
    ).resolves.toBeTruthy();
    const signed = byName.get('clear-signed.eml')!;
    expect(signed.result.key).toBe('arc-out/clear-signed.eml.jws.json');
    // Nothing lost: the signed entity is stored beside the JWS, and the result names both.
    expect(signed.result.objects).toEqual([
      expect.objectContaining({ role: 'result', key: 'arc-out/clear-signed.eml.jws.json' }),
      expect.objectContaining({
        role: 'content',
        key: 'arc-out/clear-signed.eml.content',
        size: CANONICAL.length,
      }),
    ]);
    const stored = await fetch(
      `${env.app.url}/api/v3/migration/jobs/${signed.id}/result?object=content`,
      { headers: { authorization: `Bearer ${tenant.token}` } },
    );
    expect(stored.status).toBe(200);
    expect(Buffer.from(await stored.arrayBuffer()).equals(CANONICAL)).toBe(true);
    const none = await fetch(
      `${env.app.url}/api/v3/migration/jobs/${byName.get('armoured.pem')!.id}/result?object=content`,
      { headers: { authorization: `Bearer ${tenant.token}` } },
    );
    expect(none.status).toBe(404);
    const r = await result(env.app, tenant.token, signed.id);
    await expect(
      flattenedVerify(
        { ...JSON.parse(r.body.toString()), payload: CANONICAL },
        createPublicKey(signer.privateKey),
      ),
    ).resolves.toBeTruthy();
  });
});
