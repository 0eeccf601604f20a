/**
 * A migration's objects read back and removed through the ledger (GET .../output, DELETE
 * .../outputs, DELETE .../inputs), as `keyward migrate <dir>` uses them: only what the ledger
 * records for the migration is ever opened or deleted, an input replaced since the migration
 * read it is kept, another tenant learns nothing, and a migration still running cannot be emptied.
 */
import { createHash } from 'node:crypto';
import { OpenSslDir, makeKey, type TestKey } from '../../../support/fixtures/pkcs7.ts';
import { cms } from '../../../support/fixtures/cms.ts';
import { api } from '../../../support/auth.ts';
import { tenantStore, type ObjectStore } from '../../../shared/storage/index.ts';
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
let tenant: { tenantId: string; token: string };
let store: ObjectStore;
let worker: WorkerChild;
let id: string;
let signer: TestKey;
const M = '/api/v3/migration/migrations';
const TEXT = 'a letter from the archive\n';
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

async function read(key: string): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const c of await store.get(key)) parts.push(c as Buffer);
  return Buffer.concat(parts);
}

function output(migration: string, query: string, token = tenant.token) {
  return fetch(`${env.app.url}${M}/${migration}/output?${query}`, {
    headers: { authorization: `Bearer ${token}` },
  });
}

const rows = (migration: string) => reportRows(env.app, tenant.token, migration);

/** The outputs of report rows in the order the outputs stream sends them: content before result. */
const inStreamOrder = (converted: Awaited<ReturnType<typeof rows>>) =>
  converted.flatMap((r) =>
    [...r.outputs]
      .sort((a, b) => (a.role === 'content' ? -1 : b.role === 'content' ? 1 : 0))
      .map((o) => ({ sourceKey: r.sourceKey, ...o })),
  );

/** One part of the outputs stream, read by its Content-Length (not with the CLI's reader). */
interface Part {
  headers: Record<string, string>;
  body: Buffer;
}

/** GET .../outputs, its multipart/mixed body cut into parts here, independently of the service's code. */
async function outputsOf(
  migration: string,
  query = '',
  token = tenant.token,
): Promise<{ status: number; parts: Part[] }> {
  const res = await fetch(`${env.app.url}${M}/${migration}/outputs?${query}`, {
    headers: { authorization: `Bearer ${token}` },
  });
  const raw = Buffer.from(await res.arrayBuffer());
  if (res.status !== 200) return { status: res.status, parts: [] };
  const boundary = /boundary="([^"]+)"/.exec(res.headers.get('content-type') ?? '')![1];
  const parts: Part[] = [];
  let at = 0;
  for (;;) {
    const delim = `${parts.length ? '\r\n' : ''}--${boundary}`;
    expect(raw.subarray(at, at + delim.length).toString('latin1')).toBe(delim);
    at += delim.length;
    if (raw.subarray(at, at + 2).toString() === '--') {
      expect(raw.subarray(at + 2).toString()).toBe('\r\n');
      return { status: res.status, parts };
    }
    const end = raw.indexOf('\r\n\r\n', at);
    const headers = Object.fromEntries(
      raw
        .subarray(at + 2, end)
        .toString('latin1')
        .split('\r\n')
        .map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 2)]),
    );
    const size = Number(headers['content-length']);
    parts.push({ headers, body: raw.subarray(end + 4, end + 4 + size) });
    at = end + 4 + size;
  }
}

beforeAll(async () => {
  ssl = new OpenSslDir();
  const archive: TestKey = makeKey(ssl, 'outputs-archive', 'rsa-2048');
  signer = makeKey(ssl, 'outputs-signer', 'ec-p256');
  env = await startJobsEnv({ queue: {} });
  tenant = await tenantWithKeys(env.app, ssl, [archive, signer]);
  store = tenantStore(await env.app.ctx.objectStore.get(), tenant.tenantId);
  ssl.write('plain.txt', Buffer.from(TEXT));
  const enc = cms.encrypt(ssl, 'plain.txt', {
    to: { recip: archive },
    binary: true,
    cipher: 'aes-256-cbc',
  });
  const signed = cms.sign(ssl, 'plain.txt', {
    by: signer,
    detached: false,
    binary: true,
    outform: 'DER',
  });
  for (const [key, bytes] of [
    ['in/enc.p7m', enc],
    ['in/signed.p7m', signed],
    ['in/junk.p7m', Buffer.from('not CMS\n')],
  ] as const)
    expect((await upload(env.app, tenant.token, key, bytes)).status).toBe(201);
  worker = await spawnWorker(env.workerEnv());
  const created = await api(env.app, 'POST', M, tenant.token, {
    source: { prefix: 'in/' },
    output: { prefix: 'out/' },
  });
  expect(created.status).toBe(202);
  id = created.body.id as string;
  await waitForMigration(env.app, tenant.token, id, 'completed');
}, 120_000);

afterAll(async () => {
  await worker?.stop();
  await env?.close();
  ssl?.cleanup();
});

describe("a migration's outputs", () => {
  it('when each output is read by its source key, then the bytes are those the ledger records, with their type and length', async () => {
    for (const row of (await rows(id)).filter((r) => r.outcome === 'converted'))
      for (const o of row.outputs) {
        const res = await output(id, `object=${encodeURIComponent(row.sourceKey)}&role=${o.role}`);
        expect(res.status).toBe(200);
        const bytes = Buffer.from(await res.arrayBuffer());
        expect(res.headers.get('content-type')).toBe(o.contentType);
        expect(Number(res.headers.get('content-length'))).toBe(o.size);
        expect(sha256(bytes)).toBe(o.sha256);
        expect(bytes.equals(await read(o.key))).toBe(true);
      }
    const content = await output(id, 'object=in/signed.p7m&role=content');
    expect(await content.text()).toBe(TEXT);
  }, 30_000);

  it('when every output is read in one answer, then each part is an output the ledger records, a content before its result, in source-key order', async () => {
    const converted = (await rows(id)).filter((r) => r.outcome === 'converted');
    const { status, parts } = await outputsOf(id);
    expect(status).toBe(200);
    const expected = inStreamOrder(converted);
    expect(
      parts.map((p) => [
        decodeURIComponent(p.headers['keyward-source-key']),
        p.headers['keyward-role'],
      ]),
    ).toEqual(expected.map((o) => [o.sourceKey, o.role]));
    for (const [i, p] of parts.entries()) {
      const o = expected[i];
      expect(p.headers['content-type']).toBe(o.contentType);
      expect(p.headers['keyward-sha256']).toBe(o.sha256);
      expect(sha256(p.body)).toBe(o.sha256);
      expect(p.body.equals(await read(o.key))).toBe(true);
    }
    expect(parts.find((p) => p.headers['keyward-role'] === 'content')!.body.toString()).toBe(TEXT);

    // Paged: one object, then the next after it, then nothing past the last.
    const first = await outputsOf(id, 'limit=1');
    expect(new Set(first.parts.map((p) => p.headers['keyward-source-key']))).toEqual(
      new Set([encodeURIComponent(converted[0].sourceKey)]),
    );
    const next = await outputsOf(id, `limit=1&after=${encodeURIComponent(converted[0].sourceKey)}`);
    expect(new Set(next.parts.map((p) => p.headers['keyward-source-key']))).toEqual(
      new Set([encodeURIComponent(converted[1].sourceKey)]),
    );
    const past = await outputsOf(id, `after=${encodeURIComponent(converted[1].sourceKey)}`);
    expect(past).toEqual({ status: 200, parts: [] });
  }, 30_000);

  it('when a migration has more outputs than are opened ahead and one is gone from storage, then the others come whole and in order, without it', async () => {
    const signed = cms.sign(ssl, 'plain.txt', {
      by: signer,
      detached: false,
      binary: true,
      outform: 'DER',
    });
    for (let i = 0; i < 12; i += 1)
      expect(
        (await upload(env.app, tenant.token, `many/m${String(i).padStart(2, '0')}.p7m`, signed))
          .status,
      ).toBe(201);
    const created = await api(env.app, 'POST', M, tenant.token, {
      source: { prefix: 'many/' },
      output: { prefix: 'many-out/' },
    });
    expect(created.status).toBe(202);
    const many = created.body.id as string;
    await waitForMigration(env.app, tenant.token, many, 'completed');
    const converted = (await rows(many)).filter((r) => r.outcome === 'converted');
    expect(converted).toHaveLength(12);
    const expected = inStreamOrder(converted);
    expect(expected).toHaveLength(24);
    const gone = expected[9];
    await store.delete(gone.key);
    const { status, parts } = await outputsOf(many);
    expect(status).toBe(200);
    const left = expected.filter((o) => o !== gone);
    expect(parts.map((p) => [p.headers['keyward-source-key'], p.headers['keyward-role']])).toEqual(
      left.map((o) => [encodeURIComponent(o.sourceKey), o.role]),
    );
    for (const [i, p] of parts.entries()) expect(sha256(p.body)).toBe(left[i].sha256);
  }, 60_000);

  it('when the outputs stream is asked by another tenant or out of bounds, then 404 and 400 with nothing streamed', async () => {
    const other = await tenantWithKeys(env.app, ssl, []);
    expect((await outputsOf(id, '', other.token)).status).toBe(404);
    expect((await outputsOf('00000000-0000-4000-8000-000000000000')).status).toBe(404);
    for (const q of ['limit=0', 'limit=10001', 'limit=x', 'after='])
      expect((await outputsOf(id, q)).status).toBe(400);
  }, 30_000);

  it('when what is asked is no output of this migration, then 404, the same for another tenant as for a key that does not exist', async () => {
    const other = await tenantWithKeys(env.app, ssl, []);
    const answers = [
      await output(id, 'object=in/enc.p7m&role=content'), // an EnvelopedData has no content
      await output(id, 'object=in/junk.p7m'), // refused: no output
      await output(id, 'object=in/none.p7m'),
      await output(id, `object=${encodeURIComponent('out/enc.p7m.jwe')}`), // an output key is no source
      await output(id, 'object=in/enc.p7m', other.token),
    ];
    for (const res of answers) {
      expect(res.status).toBe(404);
      expect(((await res.json()) as { type: string }).type).toMatch(/not-found$/);
    }
    expect((await output(id, 'object=')).status).toBe(400);
  }, 30_000);

  it('when a paused migration is emptied, then 409 and nothing is deleted', async () => {
    const created = await api(env.app, 'POST', M, tenant.token, {
      source: { prefix: 'none/' },
      output: { prefix: 'out2/' },
      rateLimit: 1,
    });
    const paused = await api(env.app, 'POST', `${M}/${created.body.id}/pause`, tenant.token);
    if (paused.status === 200) {
      const r = await api(env.app, 'DELETE', `${M}/${created.body.id}/outputs`, tenant.token);
      expect(r.status).toBe(409);
      expect(r.body.type).toMatch(/invalid-transition$/);
    } else expect(paused.body.type).toMatch(/invalid-transition$/); // it completed first
  }, 30_000);

  it('when a completed migration is emptied, then every output goes, nothing else does, the report stays, and a second call deletes nothing', async () => {
    const other = await tenantWithKeys(env.app, ssl, []);
    expect((await api(env.app, 'DELETE', `${M}/${id}/outputs`, other.token)).status).toBe(404);
    const outputs = (await rows(id)).flatMap((r) => r.outputs);
    const first = await api(env.app, 'DELETE', `${M}/${id}/outputs`, tenant.token);
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ id, deleted: outputs.length, kept: 0 });
    const left: string[] = [];
    for await (const o of store.list('')) left.push(o.key);
    expect(left.filter((k) => k.startsWith('out/'))).toEqual([]);
    expect(left).toEqual(expect.arrayContaining(['in/enc.p7m', 'in/signed.p7m', 'in/junk.p7m']));
    expect((await rows(id)).map((r) => r.outcome).sort()).toEqual([
      'converted',
      'converted',
      'refused',
    ]);
    const again = await api(env.app, 'DELETE', `${M}/${id}/outputs`, tenant.token);
    expect(again.body).toEqual({ id, deleted: 0, kept: 0 });
    expect(await outputsOf(id)).toEqual({ status: 200, parts: [] });
    const gone = await output(id, 'object=in/enc.p7m');
    expect(gone.status).toBe(404);
    expect(((await gone.json()) as { detail: string }).detail).toContain('no longer exists');
  }, 30_000);

  it('when its inputs are removed, then each converted source the migration read goes, a refused one and one replaced since stay, and a second call deletes nothing', async () => {
    const other = await tenantWithKeys(env.app, ssl, []);
    expect((await api(env.app, 'DELETE', `${M}/${id}/inputs`, other.token)).status).toBe(404);
    // Replaced after the migration read it: not what the ledger proves was converted.
    const replaced = Buffer.from('a newer version, never converted\n');
    expect((await upload(env.app, tenant.token, 'in/signed.p7m', replaced)).status).toBe(201);
    const first = await api(env.app, 'DELETE', `${M}/${id}/inputs`, tenant.token);
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ id, deleted: 1, kept: 1 });
    const left: string[] = [];
    for await (const o of store.list('in/')) left.push(o.key);
    expect(left.sort()).toEqual(['in/junk.p7m', 'in/signed.p7m']);
    expect((await read('in/signed.p7m')).equals(replaced)).toBe(true);
    const again = await api(env.app, 'DELETE', `${M}/${id}/inputs`, tenant.token);
    expect(again.body).toEqual({ id, deleted: 0, kept: 1 });
    expect((await rows(id)).map((r) => r.outcome).sort()).toEqual([
      'converted',
      'converted',
      'refused',
    ]);
  }, 30_000);
});
