import { startTestApp, type TestApp } from '../../../support/app.ts';
import { TEST_ENGINE } from '../../../support/database.ts';
import { adminToken, api, makeTenant, userToken, type TestTenant } from '../../../support/auth.ts';
import { KEY_TYPES, KEY_TYPE_SPECS, type KeyType } from '../../../shared/crypto/registry.ts';
import { sleep } from '../../support/time.ts';

const KEY_PERMS = [
  'admin.keys.read',
  'admin.keys.create',
  'admin.keys.rotate',
  'admin.keys.suspend',
  'admin.keys.revoke',
  'admin.keys.archive',
  'admin.keys.orchestrate',
  'admin.keys.import',
];

describe(`admin keys (${TEST_ENGINE})`, () => {
  let app: TestApp;
  let t: TestTenant;
  let token: string;
  let base: string;
  beforeAll(async () => {
    app = await startTestApp();
    t = await makeTenant(app, KEY_PERMS);
    token = await userToken(app, t);
    base = `/api/v3/admin/tenants/${t.tenantId}/keys`;
  });
  afterAll(async () => {
    await app.stop();
  });

  it('when keys of every classical type are created, then 201 with metadata and a public JWK but never private material', async () => {
    for (const type of ['aes-256', 'rsa-2048', 'ec-p256', 'ed25519', 'ml-kem-768', 'ml-dsa-65']) {
      const r = await api(app, 'POST', base, token, { type, kid: `k-${type}` });
      expect(r.status).toBe(201);
      expect(r.body).toMatchObject({ kid: `k-${type}`, type, state: 'active', currentVersion: 1 });
      const text = JSON.stringify(r.body);
      expect(text).not.toMatch(/"d"|"k"|privateKey|secret/);
    }
  });

  it('when a kid is reused, then 409; when the type is unknown, then 400', async () => {
    expect(
      (await api(app, 'POST', base, token, { type: 'aes-256', kid: 'k-aes-256' })).status,
    ).toBe(409);
    expect((await api(app, 'POST', base, token, { type: 'des' })).status).toBe(400);
  });

  it('when a key goes through its lifecycle, then the transition table of the key lifecycle holds', async () => {
    await api(app, 'POST', base, token, { type: 'aes-128', kid: 'life' });
    expect((await api(app, 'POST', `${base}/life/rotate`, token)).body).toMatchObject({
      currentVersion: 2,
      state: 'active',
    });
    expect((await api(app, 'POST', `${base}/life/archive`, token)).status).toBe(409);
    expect((await api(app, 'POST', `${base}/life/suspend`, token)).body.state).toBe('suspended');
    expect((await api(app, 'POST', `${base}/life/rotate`, token)).status).toBe(409);
    expect((await api(app, 'POST', `${base}/life/resume`, token)).body.state).toBe('active');
    expect((await api(app, 'POST', `${base}/life/revoke`, token)).body.state).toBe('revoked');
    expect((await api(app, 'POST', `${base}/life/resume`, token)).status).toBe(409);
    expect((await api(app, 'POST', `${base}/life/archive`, token)).body.state).toBe('archived');
    const list = await api(app, 'GET', base, token);
    expect((list.body.items as Array<{ kid: string }>).some((k) => k.kid === 'life')).toBe(false);
    const archived = await api(app, 'GET', `${base}?state=archived`, token);
    expect((archived.body.items as Array<{ kid: string }>).map((k) => k.kid)).toEqual(['life']);
  });
  it('when a key of every type is created (one SLH-DSA variant), then the slow types and every RSA size are generated in the expensive-work pool and every key loads', async () => {
    const types = [...KEY_TYPES.filter((k) => !k.startsWith('slh-dsa-')), 'slh-dsa-sha2-128f'];
    const tasks: string[] = [];
    const run = app.ctx.expensive.run;
    app.ctx.expensive.run = ((task: string, ...rest: unknown[]) => {
      tasks.push(task);
      return (run as (...a: unknown[]) => Promise<unknown>).call(app.ctx.expensive, task, ...rest);
    }) as typeof run;
    try {
      const made = await Promise.all(
        types.map((type) => api(app, 'POST', base, token, { type, kid: `all-${type}` })),
      );
      expect(made.map((r) => [r.body.kid, r.status])).toEqual(
        types.map((type) => [`all-${type}`, 201]),
      );
    } finally {
      app.ctx.expensive.run = run;
    }
    // rsa-2048/3072/4096, rsa-pss-2048/3072/4096 and the SLH-DSA variant.
    expect(tasks.filter((x) => x === 'generateKey')).toHaveLength(7);
    for (const type of types) {
      const read = await api(app, 'GET', `${base}/all-${type}`, token);
      expect(read.body).toMatchObject({
        type,
        state: 'active',
        currentVersion: 1,
        source: 'generated',
      });
      // Symmetric keys (AES, HMAC) have no public key to show.
      expect(Boolean(read.body.publicKey)).toBe(!KEY_TYPE_SPECS[type as KeyType].symmetric);
      const loaded = (await app.ctx.keys.get(t.tenantId, `all-${type}`)).versions.get(1)!;
      expect(loaded.type).toBe(type);
    }
  });

  it('when a bulk operation names a few keys, then it answers inline with a result per key, successes and failures mixed', async () => {
    for (const kid of ['o-1', 'o-2', 'o-3'])
      await api(app, 'POST', base, token, { type: 'aes-128', kid });
    await api(app, 'POST', `${base}/o-3/suspend`, token);
    const r = await api(app, 'POST', `${base}/orchestrate`, token, {
      operation: 'suspend',
      kids: ['o-1', 'o-2', 'missing', 'o-3'],
    });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ operation: 'suspend', total: 4, succeeded: 2 });
    expect(
      (r.body.results as Array<{ kid: string; status: number }>).map((x) => [x.kid, x.status]),
    ).toEqual([
      ['o-1', 200],
      ['o-2', 200],
      ['missing', 404],
      ['o-3', 409],
    ]);
    const bySelector = await api(app, 'POST', `${base}/orchestrate`, token, {
      operation: 'resume',
      selector: { kidPrefix: 'o-', state: 'suspended' },
    });
    expect(bySelector.body).toMatchObject({ total: 3, succeeded: 3 });
    expect(
      (
        await api(app, 'POST', `${base}/orchestrate`, token, {
          operation: 'archive',
          kids: ['o-1'],
        })
      ).status,
    ).toBe(400);
    expect(
      (await api(app, 'POST', `${base}/orchestrate`, token, { operation: 'rotate' })).status,
    ).toBe(400);
  });

  it('when a bulk operation selects more than 50 keys, then 202 and its progress reaches completed with every key rotated and audited', async () => {
    const kids = Array.from({ length: 60 }, (_, i) => `bulk-${String(i).padStart(2, '0')}`);
    for (const kid of kids)
      expect((await api(app, 'POST', base, token, { type: 'aes-128', kid })).status).toBe(201);
    const started = await api(app, 'POST', `${base}/orchestrate`, token, {
      operation: 'rotate',
      selector: { kidPrefix: 'bulk-' },
    });
    expect(started.status).toBe(202);
    expect(started.body).toMatchObject({
      operationId: expect.any(String),
      total: 60,
      state: 'running',
    });
    let progress = await api(app, 'GET', started.body.progress as string, token);
    for (let i = 0; i < 200 && progress.body.state !== 'completed'; i++) {
      await sleep(50);
      progress = await api(app, 'GET', started.body.progress as string, token);
    }
    expect(progress.body).toMatchObject({ state: 'completed', total: 60, done: 60, failed: 0 });
    const list = await api(app, 'GET', `${base}?limit=500`, token);
    const bulk = (list.body.items as Array<{ kid: string; currentVersion: number }>).filter((k) =>
      k.kid.startsWith('bulk-'),
    );
    expect(bulk.map((k) => k.currentVersion)).toEqual(kids.map(() => 2));
    await app.ctx.audit.flush();
    const audited = await app.ctx
      .db('audit_events')
      .where({ tenant_id: t.tenantId, action: 'key.rotate' })
      .whereLike('target', 'bulk-%')
      .count({ n: '*' })
      .first();
    expect(Number(audited!.n)).toBe(60);
    expect(
      (await api(app, 'GET', `${base}/orchestrate/${crypto.randomUUID()}`, token)).status,
    ).toBe(404);
    expect((await api(app, 'GET', `${base}/orchestrate/not-a-uuid`, token)).status).toBe(404);
    const row = await app.ctx.db('key_operations').where({ id: started.body.operationId }).first();
    expect(row).toMatchObject({
      tenant_id: t.tenantId,
      operation: 'rotate',
      state: 'completed',
      done: 60,
      failed: 0,
    });
  });

  it("when a bulk operation is read, then the answer comes from the database: another instance's operation is served, one whose instance died reads as interrupted, another tenant's is not found", async () => {
    const other = await makeTenant(app, KEY_PERMS, 'bulk-other');
    const row = (id: string, tenantId: string, updatedAgoMs: number) => ({
      id,
      tenant_id: tenantId,
      operation: 'revoke',
      total: 100,
      done: 3,
      failed: 1,
      state: 'running',
      started_by: 'user:elsewhere',
      results: JSON.stringify([
        { kid: 'a', status: 200, state: 'revoked' },
        { kid: 'b', status: 200, state: 'revoked' },
        { kid: 'c', status: 409 },
      ]),
      started_at: new Date(Date.now() - 120_000),
      updated_at: new Date(Date.now() - updatedAgoMs),
    });
    const [live, dead, foreign] = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()];
    await app.ctx
      .db('key_operations')
      .insert([
        row(live, t.tenantId, 1_000),
        row(dead, t.tenantId, 120_000),
        row(foreign, other.tenantId, 1_000),
      ]);
    const running = await api(app, 'GET', `${base}/orchestrate/${live}`, token);
    expect(running.status).toBe(200);
    expect(running.body).toMatchObject({
      id: live,
      tenantId: t.tenantId,
      operation: 'revoke',
      total: 100,
      done: 3,
      failed: 1,
      state: 'running',
    });
    expect(running.body.results).toHaveLength(3);
    expect(running.body).not.toHaveProperty('finishedAt');
    expect((await api(app, 'GET', `${base}/orchestrate/${dead}`, token)).body).toMatchObject({
      state: 'interrupted',
      done: 3,
    });
    expect((await api(app, 'GET', `${base}/orchestrate/${foreign}`, token)).status).toBe(404);
  });
  it('when a role holds admin.keys.resume but not admin.keys.suspend, then it resumes a key and cannot suspend one', async () => {
    const r = await makeTenant(app, ['admin.keys.create', 'admin.keys.resume'], 'resumer');
    const own = await userToken(app, r);
    const keys = `/api/v3/admin/tenants/${r.tenantId}/keys`;
    await api(app, 'POST', keys, own, { type: 'aes-256', kid: 'paused' });
    expect((await api(app, 'POST', `${keys}/paused/suspend`, own)).status).toBe(403);
    expect(
      (await api(app, 'POST', `${keys}/paused/suspend`, await adminToken(app))).body.state,
    ).toBe('suspended');
    expect((await api(app, 'POST', `${keys}/paused/resume`, own)).body.state).toBe('active');
  });
});
