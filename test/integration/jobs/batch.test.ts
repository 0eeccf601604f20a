/**
 * A batch over a prefix of mixed files, converted by a real worker process from s3rver storage:
 * every good file gives a JOSE result that jose verifies or decrypts to the original content,
 * and the garbage file fails on its own with its problem, without failing the batch.
 */
import { createPublicKey, randomBytes } from 'node:crypto';
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
let keys: Record<string, TestKey>;
let worker: WorkerChild;
let tenant: { tenantId: string; token: string };
const content: Record<string, Buffer> = {};

beforeAll(async () => {
  ssl = new OpenSslDir();
  keys = {
    signer: makeKey(ssl, 'batch-signer', 'rsa-2048'),
    rsa: makeKey(ssl, 'batch-rsa', 'rsa-2048'),
    ec: makeKey(ssl, 'batch-ec', 'ec-p256'),
  };
  env = await startJobsEnv();
  [tenant, worker] = await Promise.all([
    tenantWithKeys(env.app, ssl, [
      { ...keys.signer, usage: 'sign' },
      keys.rsa,
      { ...keys.ec, usage: 'encrypt' },
    ]),
    spawnWorker(env.workerEnv()),
  ]);
});

afterAll(async () => {
  await worker?.stop();
  await env?.close();
  ssl?.cleanup();
});

/** Makes the inputs with openssl: name → file bytes; `content` keeps what each one carries. */
function makeInputs(): Record<string, Buffer> {
  const files: Record<string, Buffer> = {};
  const plain = (name: string, size: number) => {
    content[name] = randomBytes(size);
    ssl.write(`${name}.bin`, content[name]);
    return `${name}.bin`;
  };
  files['signed.p7m'] = cms.sign(ssl, plain('signed.p7m', 50_000), {
    by: keys.signer,
    detached: false,
    binary: true,
    outform: 'DER',
  });
  files['deep/streamed-signed.p7m'] = cms.sign(
    ssl,
    plain('deep/streamed-signed.p7m'.replace('/', '_'), 300_000),
    { by: keys.signer, detached: false, binary: true, stream: true, outform: 'DER' },
  );
  content['deep/streamed-signed.p7m'] = content['deep_streamed-signed.p7m'];
  files['enveloped-rsa.p7m'] = cms.encrypt(ssl, plain('enveloped-rsa.p7m', 1_000_000), {
    to: { recip: keys.rsa },
    cipher: 'aes-256-cbc',
    binary: true,
    outform: 'DER',
  });
  files['enveloped-ec.p7m'] = cms.encrypt(ssl, plain('enveloped-ec.p7m', 70_001), {
    to: { recip: keys.ec },
    cipher: 'aes-128-cbc',
    binary: true,
    stream: true,
    outform: 'DER',
  });
  files['garbage.p7m'] = randomBytes(4096);
  return files;
}

async function verifyResult(name: string, child: JobBody): Promise<void> {
  const r = await result(env.app, tenant.token, child.id);
  expect(r.status).toBe(200);
  expect(r.body.length).toBe(child.result.size);
  if (name.includes('signed')) {
    expect(child.result.key).toBe(`out/${name}.jws.json`);
    expect(r.contentType).toBe('application/octet-stream');
    const jws = JSON.parse(r.body.toString());
    await expect(
      flattenedVerify({ ...jws, payload: content[name] }, createPublicKey(keys.signer.privateKey)),
    ).resolves.toBeTruthy();
    return;
  }
  expect(child.result.key).toBe(`out/${name}.jwe`);
  const { parts, closed } = parseMultipart(r.body, r.contentType);
  expect(closed).toBe(true);
  const jwe = JSON.parse(parts[0].body.toString());
  const ct = parts[1].body;
  const key = name.includes('-ec') ? keys.ec : keys.rsa;
  const { plaintext } = await flattenedDecrypt(
    {
      protected: jwe.protected,
      header: jwe.recipients[0].header,
      encrypted_key: jwe.recipients[0].encrypted_key,
      iv: jwe.iv,
      ciphertext: ct.subarray(0, ct.length - 16).toString('base64url'),
      tag: ct.subarray(ct.length - 16).toString('base64url'),
    },
    key.privateKey,
  );
  expect(Buffer.from(plaintext).equals(content[name])).toBe(true);
}

describe('batch migration over a prefix (real Redis, s3rver, worker process)', () => {
  it('when a prefix holds signed, enveloped and garbage files, then the good ones convert and verify with jose and the garbage fails alone with its problem', async () => {
    const files = makeInputs();
    for (const [name, bytes] of Object.entries(files)) {
      const up = await upload(env.app, tenant.token, `in/${name}`, bytes);
      expect(up.status).toBe(201);
      expect(up.body).toMatchObject({ key: `in/${name}`, size: bytes.length });
    }
    const submit = await api(env.app, 'POST', '/api/v3/migration/jobs', tenant.token, {
      source: { prefix: 'in/' },
      metadata: {},
      output: { prefix: 'out/' },
    });
    expect(submit.status).toBe(202);
    expect(submit.body).toMatchObject({ type: 'batch', progress: { objectsTotal: 5 } });
    expect(submit.headers.get('location')).toBe(`/api/v3/migration/jobs/${submit.body.id}`);

    const done = await waitForJob(
      env.app,
      tenant.token,
      submit.body.id as string,
      finished,
      40_000,
    );
    expect(done.state).toBe('completed');
    expect(done.progress).toMatchObject({ objectsTotal: 5, objectsDone: 4, objectsFailed: 1 });
    const total = Object.values(files).reduce((a, b) => a + b.length, 0);
    // Every good file was read whole; the garbage one only as far as the engine looked.
    expect(done.progress.bytesRead).toBeGreaterThanOrEqual(total - 4096);
    expect(done.progress.bytesRead).toBeLessThanOrEqual(total);
    expect(done.failures).toEqual([
      {
        id: expect.stringMatching(/^cv-/),
        source: { key: 'in/garbage.p7m' },
        problem: expect.objectContaining({
          type: expect.stringMatching(/\/problems\/cms-malformed$/),
          status: 400,
          title: 'Malformed CMS',
        }),
      },
    ]);

    const children = await api(
      env.app,
      'GET',
      `/api/v3/migration/jobs/${submit.body.id}/children?limit=2`,
      tenant.token,
    );
    expect(children.status).toBe(200);
    expect(children.body.items).toHaveLength(2);
    const all: JobBody[] = [...(children.body.items as JobBody[])];
    let cursor = children.body.nextCursor as string | null;
    while (cursor) {
      const page = await api(
        env.app,
        'GET',
        `/api/v3/migration/jobs/${submit.body.id}/children?limit=2&cursor=${cursor}`,
        tenant.token,
      );
      all.push(...(page.body.items as JobBody[]));
      cursor = page.body.nextCursor as string | null;
    }
    expect(all.map((c) => c.source.key).sort()).toEqual(
      Object.keys(files)
        .map((n) => `in/${n}`)
        .sort(),
    );
    for (const child of all) {
      const name = child.source.key.slice(3);
      if (name === 'garbage.p7m') {
        expect(child).toMatchObject({
          state: 'failed',
          attempts: { made: 1 },
          result: null,
          problem: { type: expect.stringMatching(/\/problems\/cms-malformed$/) },
        });
        expect((await result(env.app, tenant.token, child.id)).status).toBe(409);
        continue;
      }
      expect(child).toMatchObject({
        state: 'completed',
        problem: null,
        progress: { objectsDone: 1, bytesRead: files[name].length },
      });
      await verifyResult(name, child);
    }
  });
});
