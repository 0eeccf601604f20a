/**
 * A durable migration against the decryption-failure budget: the budget also counts decryptions
 * in flight, so a chunk converting more objects at once than the budget allows finds it spent for
 * a moment. Those objects wait and convert; they are not refused. A real decryption failure is
 * still refused with the one decryption-failed problem.
 */
import { OpenSslDir, makeKey } from '../../../support/fixtures/pkcs7.ts';
import { cms } from '../../../support/fixtures/cms.ts';
import { api } from '../../../support/auth.ts';
import {
  spawnWorker,
  startJobsEnv,
  tenantWithKeys,
  upload,
  type JobsEnv,
  type WorkerChild,
} from '../jobs/harness.ts';
import { reportRows, waitForMigration } from './support.ts';

let env: JobsEnv;
let ssl: OpenSslDir;
let worker: WorkerChild;
const M = '/api/v3/migration/migrations';

beforeAll(async () => {
  ssl = new OpenSslDir();
  env = await startJobsEnv({ queue: {} });
}, 60_000);

afterAll(async () => {
  await worker?.stop();
  await env?.close();
  ssl?.cleanup();
});

it('when a chunk decrypts more objects at once than the budget allows, then they wait and convert, and only the tampered one is refused', async () => {
  const key = makeKey(ssl, 'budget-recipient', 'rsa-2048');
  const tenant = await tenantWithKeys(env.app, ssl, [key]);
  ssl.write('plain.txt', Buffer.from('a letter\n'.repeat(100)));
  const enc = cms.encrypt(ssl, 'plain.txt', {
    to: { recip: key },
    binary: true,
    cipher: 'aes-256-cbc',
    outform: 'DER',
  });
  const tampered = Buffer.from(enc);
  tampered[tampered.length - 17] ^= 1;
  for (let i = 0; i < 8; i++)
    expect((await upload(env.app, tenant.token, `in/m${i}.p7m`, enc)).status).toBe(201);
  expect((await upload(env.app, tenant.token, 'in/tampered.p7m', tampered)).status).toBe(201);
  worker = await spawnWorker(
    env.workerEnv({
      MIGRATION_OBJECT_CONCURRENCY: '8',
      DECRYPT_FAILURE_BUDGET: '3',
      DECRYPT_FAILURE_WINDOW_SECONDS: '2',
    }),
  );
  const created = await api(env.app, 'POST', M, tenant.token, {
    source: { prefix: 'in/' },
    output: { prefix: 'out/' },
  });
  expect(created.status).toBe(202);
  const id = created.body.id as string;
  const done = await waitForMigration(env.app, tenant.token, id, 'completed');
  expect(done.counts).toMatchObject({ converted: 8, refused: 1, pending: 0 });
  const refused = (await reportRows(env.app, tenant.token, id)).filter(
    (r) => r.outcome === 'refused',
  );
  expect(refused).toEqual([
    expect.objectContaining({ sourceKey: 'in/tampered.p7m', problem: 'decryption-failed' }),
  ]);
}, 90_000);
