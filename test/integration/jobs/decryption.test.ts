/**
 * The jobs decrypt as their submitter may, with a real worker, Redis and
 * s3rver: the decrypting route of test/integration/migration/decryption-oracle.test.ts that needs
 * the queue. A submitter without crypto.decrypt gets a job of its own whose encrypted input fails
 * with 403 forbidden; with it, every way decryption fails is one decryption-failed, and the
 * failures count against the submitter's budget.
 */
import { constants, publicEncrypt, randomBytes } from 'node:crypto';
import { OpenSslDir, makeKey, type TestKey } from '../../../support/fixtures/pkcs7.ts';
import { api, workloadToken } from '../../../support/auth.ts';
import { createRole } from '../../../api/services/admin/roles.ts';
import { registerWorkload } from '../../../api/services/admin/workloads.ts';
import {
  finished,
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
import { JOB_PERMISSIONS } from '../../../support/job-permissions.ts';

let env: JobsEnv;
let ssl: OpenSslDir;
let rsa: TestKey;
let worker: WorkerChild;
let tenantId: string;
let both: string;
let noDecrypt: string;
let file: Buffer;

beforeAll(async () => {
  ssl = new OpenSslDir();
  rsa = makeKey(ssl, 'jobs-oracle-rsa', 'rsa-2048');
  ssl.write('data.bin', randomBytes(5000));
  file = cms.encrypt(ssl, 'data.bin', {
    to: rsa,
    cipher: 'aes-256-cbc',
    binary: true,
    outform: 'DER',
  });
  env = await startJobsEnv();
  let t: { tenantId: string; token: string };
  [t, worker] = await Promise.all([
    tenantWithKeys(env.app, ssl, [rsa]),
    // A small budget in the worker, so the fourth failure shows it spent.
    spawnWorker(env.workerEnv({ DECRYPT_FAILURE_BUDGET: '3' })),
  ]);
  tenantId = t.tenantId;
  both = t.token;
  const role = await createRole(env.app.ctx, tenantId, {
    name: 'no-decrypt',
    permissions: JOB_PERMISSIONS.filter((p) => p !== 'crypto.decrypt'),
  });
  noDecrypt = await workloadToken(
    env.app,
    await registerWorkload(env.app.ctx, tenantId, { name: 'no-decrypt', roleId: role.id }),
  );
});

afterAll(async () => {
  await worker?.stop();
  await env?.close();
  ssl?.cleanup();
});

async function run(token: string, name: string, input: Buffer): Promise<JobBody> {
  expect((await upload(env.app, token, `in/${name}`, input)).status).toBe(201);
  const submitted = await api(env.app, 'POST', '/api/v3/migration/jobs', token, {
    source: { key: `in/${name}` },
    metadata: {},
    output: { prefix: 'out/' },
  });
  expect(submitted.status).toBe(202);
  return waitForJob(env.app, token, String(submitted.body.id), finished);
}

describe('conversion jobs and crypto.decrypt', () => {
  it('when the submitter lacks crypto.decrypt, then its job is its own and fails 403 forbidden; the same input submitted with it converts', async () => {
    const refused = await run(noDecrypt, 'a.p7m', file);
    expect(refused).toMatchObject({ state: 'failed', problem: { status: 403 } });
    expect(String(refused.problem.type)).toMatch(/\/problems\/forbidden$/);
    const done = await run(both, 'a.p7m', file);
    expect(done.state).toBe('completed');
    expect(done.id).not.toBe(refused.id);
  });

  it('when an input fails to decrypt in any way, then every job fails with the one decryption-failed, and past the budget even a good input is refused', async () => {
    const at = file.indexOf(Buffer.from([0x04, 0x82, 0x01, 0x00])) + 4;
    const withKey = (ek: Buffer) => {
      const out = Buffer.from(file);
      ek.copy(out, at);
      return out;
    };
    const garbage = randomBytes(256);
    garbage[0] = 0;
    const tampered = Buffer.from(file);
    tampered[tampered.length - 17] ^= 1;
    const inputs = {
      'a tampered final block': tampered,
      'a content key of the wrong length': withKey(
        publicEncrypt(
          { key: rsa.privateKey, padding: constants.RSA_PKCS1_PADDING },
          randomBytes(16),
        ),
      ),
      'bad key-transport padding': withKey(garbage),
    };
    const problems: Record<string, unknown> = {};
    for (const [name, input] of Object.entries(inputs)) {
      const job = await run(both, `${name.replaceAll(' ', '-')}.p7m`, input);
      expect(job.state).toBe('failed');
      problems[name] = { status: job.problem.status, type: job.problem.type };
    }
    expect(new Set(Object.values(problems).map((p) => JSON.stringify(p))).size).toBe(1);
    expect(Object.values(problems)[0]).toEqual({
      status: 400,
      type: `${env.app.config.publicBaseUrl}/problems/decryption-failed`,
    });
    // The budget (3 in this worker) is spent: even the good file fails now, loudly.
    const after = await run(both, 'good-after.p7m', file);
    expect(after).toMatchObject({ state: 'failed', problem: { status: 429 } });
    await worker.waitForOutput('decryption-failure budget spent', 10_000);
  });
});
