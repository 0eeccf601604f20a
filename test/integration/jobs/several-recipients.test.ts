/**
 * Several recipients through a queued job: mail encrypted to its sender and to the
 * tenant's key converts with the held one, and `targetKid` as a list gives a General JSON JWE that
 * jose's generalDecrypt opens with each target's key (real Redis, s3rver, a worker process). A
 * password is refused at submission: jobs store their metadata.
 */
import { randomBytes } from 'node:crypto';
import { generalDecrypt } from 'jose';
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
  type JobsEnv,
  type WorkerChild,
} from './harness.ts';
import { cms } from '../../../support/fixtures/cms.ts';

let env: JobsEnv;
let ssl: OpenSslDir;
let keys: Record<'sender' | 'recipient' | 'archive', TestKey>;
let worker: WorkerChild;
let tenant: { tenantId: string; token: string };
const data = randomBytes(50_000);

beforeAll(async () => {
  ssl = new OpenSslDir();
  keys = {
    sender: makeKey(ssl, 'jmr-sender', 'rsa-2048'),
    recipient: makeKey(ssl, 'jmr-recipient', 'ec-p256'),
    archive: makeKey(ssl, 'jmr-archive', 'rsa-2048'),
  };
  ssl.write('data.bin', data);
  env = await startJobsEnv();
  [tenant, worker] = await Promise.all([
    tenantWithKeys(env.app, ssl, [{ ...keys.recipient, usage: 'encrypt' }, keys.archive]),
    spawnWorker(env.workerEnv()),
  ]);
});

afterAll(async () => {
  await worker?.stop();
  await env?.close();
  ssl?.cleanup();
});

describe('a job over mail with several recipients', () => {
  it('when targetKid lists two keys, then each opens the result with jose', async () => {
    const mail = cms.encrypt(ssl, 'data.bin', {
      to: [keys.sender, keys.recipient],
      cipher: 'aes-256-cbc',
      binary: true,
      outform: 'DER',
    });
    expect((await upload(env.app, tenant.token, 'mr/mail.p7m', mail)).status).toBe(201);
    const submit = await api(env.app, 'POST', '/api/v3/migration/jobs', tenant.token, {
      source: { key: 'mr/mail.p7m' },
      metadata: { targetKid: ['jmr-archive', 'jmr-recipient'] },
      output: { prefix: 'mr-out/' },
    });
    expect(submit.status).toBe(202);
    const done = await waitForJob(env.app, tenant.token, String(submit.body.id), finished, 40_000);
    expect(done.state).toBe('completed');
    const r = await result(env.app, tenant.token, String(submit.body.id));
    const { parts, closed } = parseMultipart(r.body, r.contentType);
    expect(closed).toBe(true);
    const header = JSON.parse(parts[0].body.toString());
    expect(header.recipients.map((x: { header: { kid: string } }) => x.header.kid)).toEqual([
      'jmr-archive#1',
      'jmr-recipient#1',
    ]);
    const ct = parts[1].body;
    const jwe = {
      ...header,
      ciphertext: ct.subarray(0, ct.length - 16).toString('base64url'),
      tag: ct.subarray(ct.length - 16).toString('base64url'),
    };
    for (const k of [keys.archive, keys.recipient])
      expect(Buffer.from((await generalDecrypt(jwe, k.privateKey)).plaintext).equals(data)).toBe(
        true,
      );
  });

  it('when the metadata holds a password, then 400 validation-failed and no job', async () => {
    const submit = await api(env.app, 'POST', '/api/v3/migration/jobs', tenant.token, {
      source: { key: 'mr/mail.p7m' },
      metadata: { password: 'archive 2019', targetKid: 'jmr-archive' },
      output: { prefix: 'mr-pw/' },
    });
    expect(submit.status).toBe(400);
    expect(JSON.stringify(submit.body)).not.toContain('archive 2019');
    expect(submit.body.type).toMatch(/\/problems\/validation-failed$/);
  });
});
