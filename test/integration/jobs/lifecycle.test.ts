/**
 * Object lifecycle with a real worker: DELETE of an upload and of a job's
 * results removes exactly the tenant's objects (another tenant's same-named object stays), is
 * audited, and leaves the job readable while its result download answers 404.
 */
import { randomBytes } from 'node:crypto';
import { OpenSslDir, makeKey, type TestKey } from '../../../support/fixtures/pkcs7.ts';
import { api } from '../../../support/auth.ts';
import { tenantStore } from '../../../shared/storage/index.ts';
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
let signer: TestKey;
let worker: WorkerChild;
let a: { tenantId: string; token: string };
let b: { tenantId: string; token: string };

beforeAll(async () => {
  ssl = new OpenSslDir();
  signer = makeKey(ssl, 'life-signer', 'rsa-2048');
  ssl.write('data.bin', randomBytes(20_000));
  env = await startJobsEnv();
  [a, b, worker] = await Promise.all([
    tenantWithKeys(env.app, ssl, [{ ...signer, usage: 'sign' }]),
    tenantWithKeys(env.app, ssl, []),
    spawnWorker(env.workerEnv()),
  ]);
});

afterAll(async () => {
  await worker?.stop();
  await env?.close();
  ssl?.cleanup();
});

const keysOf = async (tenantId: string) => {
  const out: string[] = [];
  for await (const o of tenantStore(await env.app.ctx.objectStore.get(), tenantId).list(''))
    out.push(o.key);
  return out.sort();
};

const auditActions = async (tenantId: string) => {
  await env.app.ctx.audit.flush();
  return (
    await env.app.ctx.db('audit_events').where({ tenant_id: tenantId }).select('action', 'target')
  ).map((r: { action: string; target: string }) => `${r.action} ${r.target}`);
};

describe('when uploads and results are deleted through the API', () => {
  it("then DELETE of an upload removes only the tenant's object, audited, and a second DELETE is 404", async () => {
    expect((await upload(env.app, a.token, 'in/doc.p7m', Buffer.from('a'))).status).toBe(201);
    expect((await upload(env.app, b.token, 'in/doc.p7m', Buffer.from('b'))).status).toBe(201);
    const del = await api(env.app, 'DELETE', '/api/v3/migration/uploads/in/doc.p7m', a.token);
    expect(del.status).toBe(204);
    expect(await keysOf(a.tenantId)).not.toContain('in/doc.p7m');
    expect(await keysOf(b.tenantId)).toContain('in/doc.p7m');
    expect(
      (await api(env.app, 'DELETE', '/api/v3/migration/uploads/in/doc.p7m', a.token)).status,
    ).toBe(404);
    expect(
      (await api(env.app, 'DELETE', '/api/v3/migration/uploads/../x', a.token)).status,
    ).toBeGreaterThanOrEqual(400);
    expect(await auditActions(a.tenantId)).toContain('migration.upload.delete in/doc.p7m');
  });

  it('then DELETE of a SignedData job result removes the JWS and its content, and the result answers 404 after', async () => {
    const file = cms.sign(ssl, 'data.bin', {
      by: signer,
      detached: false,
      binary: true,
      outform: 'DER',
    });
    expect((await upload(env.app, a.token, 'src/s.p7m', file)).status).toBe(201);
    const submit = await api(env.app, 'POST', '/api/v3/migration/jobs', a.token, {
      source: { key: 'src/s.p7m' },
      metadata: {},
      output: { prefix: 'res/' },
    });
    expect(submit.status).toBe(202);
    const id = String(submit.body.id);
    const done = await waitForJob(env.app, a.token, id, finished);
    expect(done.state).toBe('completed');
    expect(await keysOf(a.tenantId)).toEqual(
      expect.arrayContaining(['res/s.p7m.content', 'res/s.p7m.jws.json', 'src/s.p7m']),
    );
    // Another tenant cannot touch it: its id is a missing job there.
    expect(
      (await api(env.app, 'DELETE', `/api/v3/migration/jobs/${id}/result`, b.token)).status,
    ).toBe(404);
    const del = await api(env.app, 'DELETE', `/api/v3/migration/jobs/${id}/result`, a.token);
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ id, deleted: ['res/s.p7m.jws.json', 'res/s.p7m.content'] });
    const left = await keysOf(a.tenantId);
    expect(left).not.toContain('res/s.p7m.content');
    expect(left).not.toContain('res/s.p7m.jws.json');
    expect(left).toContain('src/s.p7m');
    expect((await result(env.app, a.token, id)).status).toBe(404);
    expect((await api(env.app, 'GET', `/api/v3/migration/jobs/${id}`, a.token)).status).toBe(200);
    expect(await auditActions(a.tenantId)).toContain(`migration.job.results.delete ${id}`);
    const again = await api(env.app, 'DELETE', `/api/v3/migration/jobs/${id}/result`, a.token);
    expect(again.body).toEqual({ id, deleted: [] });
  });
});
