/**
 * A durable migration end to end: created over a prefix through the API, listed in chunks and
 * converted by a worker process, its ledger checked against the object store (every digest read
 * back and hashed here with node:crypto, and every JWE opened with the jose library), its report
 * streamed as JSON Lines and CSV, its refused objects retried once the missing key is imported,
 * and its state operations refused where they do not apply.
 */
import { createHash, createPublicKey } from 'node:crypto';
import { compactVerify, exportJWK, importJWK } from 'jose';
import { applySettings } from '../../../api/services/keys/settings.ts';
import {
  OpenSslDir,
  decryptJweParts,
  makeKey,
  parseMultipart,
  type TestKey,
} from '../../../support/fixtures/pkcs7.ts';
import { api } from '../../../support/auth.ts';
import { reportLineLeaf, rootFromProof } from '../../../support/independent-manifest.ts';
import { expectEventually } from '../../support/time.ts';
import { importKeystore } from '../../../api/services/keys/import.ts';
import { tenantStore, type ObjectStore } from '../../../shared/storage/index.ts';
import {
  setArchiveSigningKey,
  spawnWorker,
  startJobsEnv,
  tenantWithKeys,
  upload,
  type JobsEnv,
  type WorkerChild,
} from '../jobs/harness.ts';

let env: JobsEnv;
let ssl: OpenSslDir;
let archive: TestKey;
let missing: TestKey;
let signer: TestKey;
let tenant: { tenantId: string; token: string };
let store: ObjectStore;
const inputs = new Map<string, Buffer>();
const workers: WorkerChild[] = [];

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const M = '/api/v3/migration/migrations';

async function read(key: string): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const c of await store.get(key)) parts.push(c as Buffer);
  return Buffer.concat(parts);
}

async function waitFor(id: string, state: string, timeoutMs = 60_000) {
  return expectEventually(
    async () => {
      const r = await api(env.app, 'GET', `${M}/${id}`, tenant.token);
      expect(r.body.state).toBe(state);
      return r.body as Record<string, any>;
    },
    { timeoutMs, intervalMs: 200 },
  );
}

async function report(id: string, format = 'jsonl') {
  const res = await fetch(`${env.app.url}${M}/${id}/report?format=${format}`, {
    headers: { authorization: `Bearer ${tenant.token}` },
  });
  return { status: res.status, type: res.headers.get('content-type'), text: await res.text() };
}

beforeAll(async () => {
  ssl = new OpenSslDir();
  archive = makeKey(ssl, 'ledger-archive', 'rsa-2048');
  missing = makeKey(ssl, 'ledger-missing', 'rsa-2048');
  signer = makeKey(ssl, 'ledger-signer', 'ec-p256');
  env = await startJobsEnv({ queue: {} });
  tenant = await tenantWithKeys(env.app, ssl, [archive, signer]);
  store = tenantStore(await env.app.ctx.objectStore.get(), tenant.tenantId);
  ssl.write('plain.txt', Buffer.from('a letter from the archive\n'));
  const enc = (key: TestKey) =>
    ssl.run([
      'cms',
      '-encrypt',
      '-binary',
      '-aes-256-cbc',
      '-in',
      'plain.txt',
      '-recip',
      key.certFile,
      '-outform',
      'DER',
    ]);
  const signed = ssl.run([
    'cms',
    '-sign',
    '-nodetach',
    '-binary',
    '-in',
    'plain.txt',
    '-signer',
    signer.certFile,
    '-inkey',
    signer.keyFile,
    '-outform',
    'DER',
  ]);
  for (let i = 0; i < 7; i++) inputs.set(`in/enc-${i}.p7m`, enc(archive));
  for (let i = 0; i < 3; i++) inputs.set(`in/signed-${i}.p7m`, signed);
  for (let i = 0; i < 2; i++) inputs.set(`in/other-${i}.p7m`, enc(missing));
  inputs.set('in/junk.p7m', Buffer.from('this is not a CMS message\n'));
  for (const [key, bytes] of inputs)
    expect((await upload(env.app, tenant.token, key, bytes)).status).toBe(201);
  workers.push(
    await spawnWorker(
      env.workerEnv({ MIGRATION_CHUNK_OBJECTS: '3', MIGRATION_SWEEP_INTERVAL_MS: '500' }),
    ),
  );
}, 120_000);

afterAll(async () => {
  await Promise.all(workers.map((w) => w.stop()));
  await env?.close();
  ssl?.cleanup();
});

describe('durable migrations', () => {
  let id: string;
  /** The archive signing key's public JWK, once the manifest test has set one. */
  let archivePublicJwk: Awaited<ReturnType<typeof exportJWK>>;

  it('when a migration is created over a prefix, then every object gets one ledger row and the migration completes', async () => {
    const created = await api(env.app, 'POST', M, tenant.token, {
      source: { prefix: 'in/' },
      output: { prefix: 'out/' },
    });
    expect(created.status).toBe(202);
    expect(created.headers.get('location')).toBe(`${M}/${created.body.id}`);
    id = created.body.id as string;
    const done = await waitFor(id, 'completed');
    expect(done.counts).toEqual({
      listed: inputs.size,
      converted: 10,
      refused: 3,
      pending: 0,
      bytesRead: expect.any(Number),
    });
    expect(done.etaSeconds).toBe(0);
  }, 90_000);

  it('when the report is read, then each converted row agrees with the object store and the JWEs open with jose', async () => {
    const r = await report(id);
    expect(r.status).toBe(200);
    expect(r.type).toMatch(/^application\/jsonl/);
    const rows = r.text
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(rows.map((x) => x.sourceKey)).toEqual([...inputs.keys()].sort());
    const signerSha = sha256(signer.certificate);
    for (const row of rows) {
      const input = inputs.get(row.sourceKey)!;
      if (row.outcome === 'refused') {
        expect(row.sourceKey).toMatch(/other|junk/);
        expect(row.problem).toBe(
          row.sourceKey.includes('junk') ? 'cms-malformed' : 'cms-key-not-imported',
        );
        continue;
      }
      expect(row).toMatchObject({
        outcome: 'converted',
        inputSize: input.length,
        inputSha256: sha256(input),
        attempts: 1,
      });
      for (const o of row.outputs) {
        const bytes = await read(o.key);
        expect({ key: o.key, size: bytes.length, sha256: sha256(bytes) }).toEqual({
          key: o.key,
          size: o.size,
          sha256: o.sha256,
        });
      }
      if (row.form === 'signedData') {
        expect(row.outputs.map((o: any) => o.key)).toEqual([
          row.sourceKey.replace(/^in\//, 'out/') + '.jws.json',
          row.sourceKey.replace(/^in\//, 'out/') + '.content',
        ]);
        expect(row.signers).toEqual([signerSha]);
        expect((await read(row.outputs[1].key)).toString()).toBe('a letter from the archive\n');
      } else {
        expect(row.form).toBe('envelopedData');
        expect(row.outputs.map((o: any) => o.key)).toEqual([
          row.sourceKey.replace(/^in\//, 'out/') + '.jwe',
        ]);
        expect(row.keys).toEqual(
          expect.arrayContaining([expect.objectContaining({ kid: archive.kid, version: 1 })]),
        );
        const jwe = await read(row.outputs[0].key);
        const { parts } = parseMultipart(jwe, row.outputs[0].contentType);
        const opened = await decryptJweParts(parts, archive.privateKey);
        expect(opened.plaintext.toString()).toBe('a letter from the archive\n');
      }
    }
  }, 60_000);

  it('when the report is asked as CSV, then it has a header and one line per object', async () => {
    const r = await report(id, 'csv');
    expect(r.status).toBe(200);
    expect(r.type).toMatch(/^text\/csv/);
    const lines = r.text.trim().split('\r\n');
    expect(lines[0]).toBe(
      'sourceKey,outcome,problem,detail,inputSize,inputSha256,form,outputs,keys,signers,attempts,worker,startedAt,finishedAt',
    );
    expect(lines).toHaveLength(inputs.size + 1);
  });

  it("when the manifest is asked, then jose verifies it with the archive key's public JWK and an object's proof recomputes its root with SHA-256 alone", async () => {
    // An archive signing key of the tenant's, as an administrator sets one.
    const archiveKey = makeKey(ssl, 'ledger-manifest-signer', 'ec-p256');
    await setArchiveSigningKey(env.app, ssl, tenant.tenantId, archiveKey);
    const m = await api(env.app, 'GET', `${M}/${id}/manifest`, tenant.token);
    expect(m.status).toBe(200);
    const publicJwk = await exportJWK(createPublicKey(archiveKey.privateKey));
    archivePublicJwk = publicJwk;
    const { payload, protectedHeader } = await compactVerify(
      m.body.jws as string,
      await importJWK(publicJwk, 'ES256'),
    );
    expect(protectedHeader).toMatchObject({ alg: 'ES256', typ: 'keyward-migration-manifest+jwt' });
    const claims = JSON.parse(Buffer.from(payload).toString());
    expect(claims).toMatchObject({
      migration: id,
      tenant: tenant.tenantId,
      counts: { total: inputs.size },
    });
    expect(claims.tree).toEqual({ alg: 'rfc6962-sha256', size: inputs.size, root: m.body.root });

    // The leaf of one object: its report line's manifest members in canonical JSON (RFC 8785 for
    // these values: sorted keys, no spaces), hashed and folded up its audit path (RFC 6962).
    const line = (await report(id)).text
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
      .find((r) => r.sourceKey === 'in/enc-3.p7m');
    const proof = await api(env.app, 'GET', `${M}/${id}/proof?object=in%2Fenc-3.p7m`, tenant.token);
    expect(proof.status).toBe(200);
    expect(
      rootFromProof(
        reportLineLeaf(line),
        proof.body as { index: number; size: number; path: string[] },
      ),
    ).toBe(m.body.root);
    expect(
      (await api(env.app, 'GET', `${M}/${id}/proof?object=in%2Fnone`, tenant.token)).status,
    ).toBe(404);
  }, 60_000);

  it('when the missing key is imported and the migration retried, then only the refused objects run again', async () => {
    await importKeystore(env.app.ctx, tenant.tenantId, {
      data: Buffer.concat([ssl.read(missing.keyFile), ssl.read(missing.certFile)]),
      kid: missing.kid,
    });
    const before = new Map(
      (await report(id)).text
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l))
        .map((r) => [r.sourceKey, r]),
    );
    const retried = await api(env.app, 'POST', `${M}/${id}/retry`, tenant.token);
    expect(retried.status).toBe(202);
    expect(retried.body.retried).toBe(3);
    const done = await waitFor(id, 'completed');
    expect(done.counts).toMatchObject({ converted: 12, refused: 1, pending: 0 });
    const after = (await report(id)).text
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    for (const row of after) {
      const old = before.get(row.sourceKey)!;
      if (old.outcome === 'converted') expect(row).toEqual(old);
      else expect(row.attempts).toBe(2);
    }

    // The worker that completed it stored the signed manifest (the tenant has an archive signing
    // key now), outside the output tree; the API answers those very bytes, every time.
    const storedKey = `.keyward/migrations/${id}/manifest.jws`;
    await expectEventually(async () => expect(await store.head(storedKey)).not.toBeNull(), {
      timeoutMs: 20_000,
      intervalMs: 200,
    });
    const stored = (await read(storedKey)).toString('ascii');
    const { payload } = await compactVerify(stored, await importJWK(archivePublicJwk, 'ES256'));
    const claims = JSON.parse(Buffer.from(payload).toString());
    expect(claims).toMatchObject({
      migration: id,
      counts: { total: inputs.size },
      tree: { size: inputs.size },
    });
    for (let i = 0; i < 2; i++) {
      const m = await api(env.app, 'GET', `${M}/${id}/manifest`, tenant.token);
      expect(m.body).toEqual({
        jws: stored,
        root: claims.tree.root,
        size: inputs.size,
        state: 'completed',
      });
    }
    for await (const o of store.list('out/')) expect(o.key).not.toMatch(/manifest/);
  }, 90_000);

  it('when a completed migration is paused, then 409 invalid-transition; another tenant reads 404', async () => {
    const paused = await api(env.app, 'POST', `${M}/${id}/pause`, tenant.token);
    expect(paused.status).toBe(409);
    expect(paused.body.type).toMatch(/invalid-transition$/);
    const other = await tenantWithKeys(env.app, ssl, []);
    expect((await api(env.app, 'GET', `${M}/${id}`, other.token)).status).toBe(404);
    expect((await api(env.app, 'GET', `${M}/not-a-uuid`, tenant.token)).status).toBe(404);
  }, 30_000);

  it('when the tenant uploads to, deletes or migrates into .keyward/, then 400 and the stored manifest the API answers stays the worker’s', async () => {
    const storedKey = `.keyward/migrations/${id}/manifest.jws`;
    const before = await api(env.app, 'GET', `${M}/${id}/manifest`, tenant.token);
    expect(before.status).toBe(200);
    for (const name of [storedKey, '.keyward/other', '.keyward']) {
      const put = await upload(env.app, tenant.token, name, Buffer.from('a.b.c'));
      expect(put.status).toBe(400);
      expect(put.body.type).toMatch(/validation-failed$/);
    }
    const del = await fetch(`${env.app.url}/api/v3/migration/uploads/${storedKey}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${tenant.token}` },
    });
    expect(del.status).toBe(400);
    const into = await api(env.app, 'POST', M, tenant.token, {
      source: { prefix: 'in/enc-' },
      output: { prefix: `.keyward/migrations/${id}/` },
    });
    expect(into.status).toBe(400);
    expect(into.body.type).toMatch(/validation-failed$/);
    const after = await api(env.app, 'GET', `${M}/${id}/manifest`, tenant.token);
    expect(after.status).toBe(200);
    expect(after.body).toEqual(before.body);
  }, 30_000);

  it('when a completed migration is retried and completes again without storing a manifest, then the manifest is not the first completion’s', async () => {
    const first = await api(env.app, 'GET', `${M}/${id}/manifest`, tenant.token);
    expect(first.status).toBe(200);
    // No archive signing key any more: the second completion stores nothing.
    const archiveKid = JSON.parse(
      Buffer.from((first.body.jws as string).split('.')[0], 'base64url').toString(),
    ).kid.split('#')[0] as string;
    await applySettings(
      env.app.ctx,
      tenant.tenantId,
      archiveKid,
      { archiveSigning: false },
      async () => 0,
    );
    const retried = await api(env.app, 'POST', `${M}/${id}/retry`, tenant.token);
    expect(retried.status).toBe(202);
    expect(retried.body.state).toBe('running');
    await waitFor(id, 'completed');
    const again = await api(env.app, 'GET', `${M}/${id}/manifest`, tenant.token);
    expect(again.body.jws).toBeUndefined();
    expect(again.status).toBe(422);
  }, 60_000);

  it('when a migration is paused, then no chunk runs until it is resumed', async () => {
    const created = await api(env.app, 'POST', M, tenant.token, {
      source: { prefix: 'in/enc-' },
      output: { prefix: 'again/' },
      rateLimit: 2,
    });
    expect(created.status).toBe(202);
    const mid = created.body.id as string;
    expect((await api(env.app, 'POST', `${M}/${mid}/pause`, tenant.token)).status).toBe(200);
    const frozen = (await api(env.app, 'GET', `${M}/${mid}`, tenant.token)).body as any;
    await new Promise((r) => setTimeout(r, 1500));
    const still = (await api(env.app, 'GET', `${M}/${mid}`, tenant.token)).body as any;
    expect(still.state).toBe('paused');
    expect(still.counts.converted).toBe(frozen.counts.converted);
    expect((await api(env.app, 'POST', `${M}/${mid}/resume`, tenant.token)).status).toBe(200);
    const done = await waitFor(mid, 'completed');
    expect(done.counts).toMatchObject({ listed: 7, converted: 7 });
  }, 90_000);
});
