/**
 * The jobs API without a worker running: 503 without Redis, streamed uploads, idempotent
 * submission, tenant isolation, permissions, and cancelling a job that has not started.
 */
import { randomBytes } from 'node:crypto';
import { OpenSslDir, makeKey, type TestKey } from '../../../support/fixtures/pkcs7.ts';
import { startTestApp, type TestApp } from '../../../support/app.ts';
import { api, makeTenant, workloadToken } from '../../../support/auth.ts';
import { result, startJobsEnv, tenantWithKeys, upload, type JobsEnv } from './harness.ts';
import { JOB_ENDPOINTS } from '../../../api/routes/v3/migration/jobs.ts';
import { endpointRouter } from '../../../api/rows/endpoint.ts';
import { UPLOAD_ENDPOINTS } from '../../../api/routes/v3/migration/uploads.ts';
import { apiDocument as openApiDocument } from '../../../api/routes/index.ts';
import type { AppContext } from '../../../api/context.ts';
import { cms } from '../../../support/fixtures/cms.ts';

const JOBS = '/api/v3/migration/jobs';

describe('jobs API without REDIS_URL (embedded defaults)', () => {
  let app: TestApp;
  let token: string;
  beforeAll(async () => {
    app = await startTestApp();
    token = await workloadToken(
      app,
      await makeTenant(app, [
        'migration.uploads.write',
        'migration.jobs.create',
        'migration.jobs.read',
        'migration.jobs.cancel',
        'migration.jobs.result.read',
      ]),
    );
  });
  afterAll(() => app?.stop());

  it('when Redis is not configured, then every jobs endpoint answers 503 queue-unavailable', async () => {
    const id = `cv-${'0'.repeat(40)}`;
    for (const [method, path, body] of [
      ['POST', JOBS, { source: { key: 'a' }, metadata: {}, output: { prefix: 'out/' } }],
      ['GET', `${JOBS}/${id}`],
      ['GET', `${JOBS}/${id}/result`],
      ['POST', `${JOBS}/${id}/cancel`],
      ['DELETE', `${JOBS}/${id}`],
      ['GET', `${JOBS}/${id}/children`],
    ] as const) {
      const r = await api(app, method, path, token, body);
      expect([method, path, r.status]).toEqual([method, path, 503]);
      expect(r.headers.get('content-type')).toContain('application/problem+json');
      expect(r.body.type).toBe(`${app.config.publicBaseUrl}/problems/queue-unavailable`);
    }
  });

  it('when Redis is not configured, then uploads still stream into DATA_DIR storage', async () => {
    const r = await upload(app, token, 'in/a.p7m', Buffer.from('hello'));
    expect(r).toEqual({
      status: 201,
      body: { key: 'in/a.p7m', size: 5, version: expect.stringMatching(/^size:5;mtime:\d+$/) },
    });
  });
});

describe('jobs API (real Redis, s3rver, no worker running)', () => {
  let env: JobsEnv;
  let ssl: OpenSslDir;
  let key: TestKey;
  let a: { tenantId: string; token: string };
  let b: { tenantId: string; token: string };
  let file: Buffer;

  beforeAll(async () => {
    ssl = new OpenSslDir();
    key = makeKey(ssl, 'api-rsa', 'rsa-2048');
    ssl.write('data.bin', randomBytes(10_000));
    file = cms.encrypt(ssl, 'data.bin', {
      to: { recip: key },
      cipher: 'aes-256-cbc',
      binary: true,
      outform: 'DER',
    });
    env = await startJobsEnv();
    a = await tenantWithKeys(env.app, ssl, [key]);
    b = await tenantWithKeys(env.app, ssl, []);
  });
  afterAll(async () => {
    await env?.close();
    ssl?.cleanup();
  });

  const submit = (token: string, body: unknown) => api(env.app, 'POST', JOBS, token, body);

  it('when a large body is PUT to uploads, then it streams into storage and the answer gives key, size and version', async () => {
    const chunk = randomBytes(1024 * 1024);
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(c) {
        if (sent >= 12) return c.close();
        sent += 1;
        c.enqueue(chunk);
      },
    });
    const r = await upload(env.app, a.token, 'big/twelve-mib.bin', stream);
    expect(r).toEqual({
      status: 201,
      body: {
        key: 'big/twelve-mib.bin',
        size: 12 * 1024 * 1024,
        version: expect.stringMatching(/^etag:/),
      },
    });
  });

  it('when the same source is submitted twice, then both answers carry the same job id and one job exists', async () => {
    expect((await upload(env.app, a.token, 'in/one.p7m', file)).status).toBe(201);
    const body = {
      source: { key: 'in/one.p7m' },
      metadata: { contentEncryption: 'A256GCM' },
      output: { prefix: 'out/' },
    };
    const first = await submit(a.token, body);
    expect(first.status).toBe(202);
    expect(first.body).toMatchObject({
      id: expect.stringMatching(/^cv-[0-9a-f]{40}$/),
      type: 'convert',
      state: 'queued',
      source: { key: 'in/one.p7m' },
      progress: { objectsTotal: 1, objectsDone: 0 },
    });
    const again = await submit(a.token, { ...body, metadata: { contentEncryption: 'A256GCM' } });
    expect(again.status).toBe(202);
    expect(again.body.id).toBe(first.body.id);
    expect(
      await env.app.ctx.redis!.exists(`${env.queueEnv.QUEUE_PREFIX}:convert:${first.body.id}`),
    ).toBe(1);
    // Other metadata is another job.
    const other = await submit(a.token, { ...body, metadata: { contentEncryption: 'A128GCM' } });
    expect(other.body.id).not.toBe(first.body.id);
    // A new version of the source object is another job too.
    await upload(env.app, a.token, 'in/one.p7m', Buffer.concat([file]));
    const sameBytes = await submit(a.token, body);
    expect(sameBytes.body.id).toBe(first.body.id);
    await upload(env.app, a.token, 'in/one.p7m', Buffer.concat([file, Buffer.from([0])]));
    expect((await submit(a.token, body)).body.id).not.toBe(first.body.id);
  });

  it('when another tenant asks for a job, its result, its cancel or its source object, then it gets 404 as for a missing job', async () => {
    await upload(env.app, a.token, 'secret/x.p7m', file);
    const job = await submit(a.token, {
      source: { key: 'secret/x.p7m' },
      metadata: {},
      output: { prefix: 'out/' },
    });
    const id = job.body.id as string;
    for (const [method, path] of [
      ['GET', `${JOBS}/${id}`],
      ['GET', `${JOBS}/${id}/result`],
      ['POST', `${JOBS}/${id}/cancel`],
      ['DELETE', `${JOBS}/${id}`],
    ] as const) {
      const r = await api(env.app, method, path, b.token);
      expect([method, path, r.status, r.body.type]).toEqual([
        method,
        path,
        404,
        `${env.app.config.publicBaseUrl}/problems/not-found`,
      ]);
    }
    // The other tenant's keys name its own area: A's object does not exist there.
    const steal = await submit(b.token, {
      source: { key: 'secret/x.p7m' },
      metadata: {},
      output: { prefix: 'out/' },
    });
    expect(steal.status).toBe(404);
    const stealBatch = await submit(b.token, {
      source: { prefix: 'secret/' },
      metadata: {},
      output: { prefix: 'out/' },
    });
    expect(stealBatch.status).toBe(422);
    // And A's job id is still A's.
    expect((await api(env.app, 'GET', `${JOBS}/${id}`, a.token)).status).toBe(200);
  });

  it('when a batch is submitted by one tenant, then the other cannot read it or its children', async () => {
    await upload(env.app, a.token, 'batch/1.p7m', file);
    await upload(env.app, a.token, 'batch/2.p7m', file);
    const batch = await submit(a.token, {
      source: { prefix: 'batch/' },
      metadata: {},
      output: { prefix: 'batch-out/' },
    });
    expect(batch.status).toBe(202);
    expect(batch.body).toMatchObject({
      id: expect.stringMatching(/^bt-/),
      type: 'batch',
      state: 'queued',
      progress: { objectsTotal: 2 },
    });
    expect(
      (
        await submit(a.token, {
          source: { prefix: 'batch/' },
          metadata: {},
          output: { prefix: 'batch-out/' },
        })
      ).body.id,
    ).toBe(batch.body.id);
    for (const path of [
      `${JOBS}/${batch.body.id}`,
      `${JOBS}/${batch.body.id}/children`,
      `${JOBS}/${batch.body.id}/result`,
    ]) {
      expect((await api(env.app, 'GET', path, b.token)).status).toBe(404);
    }
    expect(
      (await api(env.app, 'GET', `${JOBS}/${batch.body.id}/children`, a.token)).body.items,
    ).toHaveLength(2);
  });

  it('when a queued job is cancelled, then it is removed, reads as cancelled, has no result, and a resubmission queues it again', async () => {
    await upload(env.app, a.token, 'cancel/me.p7m', file);
    const body = { source: { key: 'cancel/me.p7m' }, metadata: {}, output: { prefix: 'out/' } };
    const job = await submit(a.token, body);
    const cancel = await api(env.app, 'POST', `${JOBS}/${job.body.id}/cancel`, a.token);
    expect(cancel.status).toBe(202);
    expect(cancel.body).toMatchObject({
      id: job.body.id,
      state: 'cancelled',
      problem: { type: expect.stringMatching(/\/problems\/job-cancelled$/), status: 409 },
    });
    expect((await api(env.app, 'GET', `${JOBS}/${job.body.id}`, a.token)).body.state).toBe(
      'cancelled',
    );
    expect((await result(env.app, a.token, job.body.id as string)).status).toBe(409);
    const again = await submit(a.token, body);
    expect(again.body).toMatchObject({ id: job.body.id, state: 'queued' });
  });

  it('when the body is wrong or the source missing, then problems name the field', async () => {
    const bad = await submit(a.token, { source: {}, output: { prefix: 'out/' } });
    expect(bad.status).toBe(400);
    expect(bad.body.field).toBe('source');
    expect(
      (await submit(a.token, { source: { key: '../etc/passwd' }, output: { prefix: 'out/' } }))
        .status,
    ).toBe(400);
    expect(
      (await submit(a.token, { source: { key: 'x' }, metadata: [], output: { prefix: 'out/' } }))
        .body.field,
    ).toBe('metadata');
    expect(
      (await submit(a.token, { source: { key: 'nope.p7m' }, output: { prefix: 'out/' } })).status,
    ).toBe(404);
    expect(
      (
        await submit(a.token, {
          source: { prefix: 'batch/', bucket: 'someone-elses' },
          output: { prefix: 'out/' },
        })
      ).body.field,
    ).toBe('source.bucket');
    expect((await api(env.app, 'GET', `${JOBS}/not-an-id`, a.token)).status).toBe(404);
  });

  it("when a job's output would land below .keyward/, which Keyward keeps for its own objects, then 400 validation-failed", async () => {
    expect((await upload(env.app, a.token, 'in/keyward.p7m', file)).status).toBe(201);
    for (const prefix of ['.keyward/', '.keyward/migrations/x/', '.keyward']) {
      const res = await submit(a.token, {
        source: { key: 'in/keyward.p7m' },
        output: { prefix },
      });
      expect([prefix, res.status, res.body.type]).toEqual([
        prefix,
        400,
        expect.stringMatching(/validation-failed$/),
      ]);
    }
    // A prefix that only joins the source's name into .keyward/ is refused with the output key.
    expect((await upload(env.app, a.token, 'src/ard/migrations/x/manifest.jws', file)).status).toBe(
      201,
    );
    const joined = await submit(a.token, {
      source: { prefix: 'src/' },
      output: { prefix: '.keyw' },
    });
    expect(joined.status).toBe(400);
  });

  it('when the role lacks a jobs permission, then 403 without an error member', async () => {
    const t = await makeTenant(env.app, ['migration.jobs.read']);
    const token = await workloadToken(env.app, t);
    const r = await upload(env.app, token, 'x.p7m', Buffer.from('x'));
    expect(r.status).toBe(403);
    expect(r.body.error).toBeUndefined();
    expect((await submit(token, { source: { key: 'x' }, output: { prefix: 'o/' } })).status).toBe(
      403,
    );
    expect((await api(env.app, 'POST', `${JOBS}/cv-${'0'.repeat(40)}/cancel`, token)).status).toBe(
      403,
    );
  });
});

describe('the OpenAPI document covers the jobs routes', () => {
  it('when the uploads and jobs routers are walked, then every method and path it registers is documented with responses', () => {
    const ctx = { config: { jsonLimitBytes: 65536, answerCheck: 'off' } } as unknown as AppContext;
    type Stack = Array<{ route?: { path: string; methods: Record<string, boolean> } }>;
    const routesOf = (router: unknown, prefix: string) =>
      (router as { stack: Stack }).stack
        .filter((l) => l.route)
        .flatMap((l) =>
          Object.keys(l.route!.methods)
            .filter((m) => m !== '_all')
            .map((m) => [
              m,
              `${prefix}${l.route!.path.replace(/\/$/, '').replace(/[:*](\w+)/g, '{$1}')}`,
            ]),
        );
    const registered = [
      ...routesOf(endpointRouter(ctx, UPLOAD_ENDPOINTS), '/api/v3/migration/uploads'),
      ...routesOf(endpointRouter(ctx, JOB_ENDPOINTS), '/api/v3/migration/jobs'),
    ];
    expect(registered.length).toBe(10); // with the many-files upload, DELETE of uploads and of job results
    const doc = openApiDocument('https://keyward.example') as {
      paths: Record<string, Record<string, { responses?: Record<string, unknown> }>>;
    };
    for (const [method, path] of registered)
      expect([
        method,
        path,
        Object.keys(doc.paths[path]?.[method]?.responses ?? {}).length > 0,
      ]).toEqual([method, path, true]);
  });
});
