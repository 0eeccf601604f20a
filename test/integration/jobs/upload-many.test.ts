/**
 * POST /api/v3/migration/uploads: many files in one multipart/form-data request, as pairs of a
 * `key` field and its `file` part, sent here with curl (not with our CLI's client). Each file is
 * stored whole under its key in the caller's tenant, small files several at once, the answer in
 * request order; a form that breaks the pairing, names a bad key or has no file is a problem, and
 * the file it failed in is not stored.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OpenSslDir } from '../../../support/fixtures/pkcs7.ts';
import { tenantStore, type ObjectStore } from '../../../shared/storage/index.ts';
import { startJobsEnv, tenantWithKeys, type JobsEnv } from './harness.ts';

let env: JobsEnv;
let ssl: OpenSslDir;
let dir: string;
let tenant: { tenantId: string; token: string };
let store: ObjectStore;

async function read(key: string): Promise<Buffer | null> {
  if (!(await store.head(key))) return null;
  const parts: Buffer[] = [];
  for await (const c of await store.get(key)) parts.push(c as Buffer);
  return Buffer.concat(parts);
}

/** curl -F for each [name, value] in order (a value starting with @ is a file); status and JSON. */
async function post(
  fields: Array<[string, string]>,
  token = tenant.token,
): Promise<{ status: number; body: any }> {
  // Async: the API under test answers on this process's event loop.
  const { stdout: out } = await promisify(execFile)(
    'curl',
    [
      '-s',
      '-o',
      '-',
      '-w',
      '\n%{http_code}',
      '-H',
      `authorization: Bearer ${token}`,
      ...fields.flatMap(([k, v]) => ['-F', `${k}=${v}`]),
      `${env.app.url}/api/v3/migration/uploads`,
    ],
    { encoding: 'utf8', timeout: 20_000 },
  );
  const nl = out.lastIndexOf('\n');
  return { status: Number(out.slice(nl + 1)), body: JSON.parse(out.slice(0, nl) || '{}') };
}

beforeAll(async () => {
  ssl = new OpenSslDir();
  dir = mkdtempSync(join(tmpdir(), 'keyward-upload-many-'));
  env = await startJobsEnv({ queue: {} });
  tenant = await tenantWithKeys(env.app, ssl, []);
  store = tenantStore(await env.app.ctx.objectStore.get(), tenant.tenantId);
  writeFileSync(join(dir, 'a'), 'first file\n');
  writeFileSync(join(dir, 'b'), Buffer.alloc(300_000, 7));
  writeFileSync(join(dir, 'empty'), '');
}, 60_000);

afterAll(async () => {
  await env?.close();
  ssl?.cleanup();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('many files in one upload', () => {
  it('when key and file pairs are posted, then each file is stored whole under its key, in order', async () => {
    const r = await post([
      ['key', 'many/x/a.p7m'],
      ['file', `@${join(dir, 'a')}`],
      ['key', 'many/y/b.p7m'],
      ['file', `@${join(dir, 'b')}`],
      ['key', 'many/empty.p7m'],
      ['file', `@${join(dir, 'empty')}`],
    ]);
    expect(r.status).toBe(201);
    expect(r.body).toEqual({
      objects: [
        { key: 'many/x/a.p7m', size: 11 },
        { key: 'many/y/b.p7m', size: 300_000 },
        { key: 'many/empty.p7m', size: 0 },
      ],
    });
    expect((await read('many/x/a.p7m'))!.toString()).toBe('first file\n');
    expect((await read('many/y/b.p7m'))!.equals(Buffer.alloc(300_000, 7))).toBe(true);
    expect((await read('many/empty.p7m'))!.length).toBe(0);
  }, 30_000);

  it('when many small files, one over 1 MiB and one key twice are posted, then each is stored whole, listed in request order, and the later file of a key wins', async () => {
    const fields: Array<[string, string]> = [];
    const expected = new Map<string, Buffer>();
    const listed: Array<{ key: string; size: number }> = [];
    const add = (key: string, bytes: Buffer, name: string) => {
      writeFileSync(join(dir, name), bytes);
      fields.push(['key', key], ['file', `@${join(dir, name)}`]);
      expected.set(key, bytes);
      listed.push({ key, size: bytes.length });
    };
    for (let i = 0; i < 30; i++) {
      add(`pipe/m${String(i).padStart(2, '0')}.eml`, Buffer.alloc(1000 + i * 37, i), `m${i}`);
      if (i === 12) add('pipe/twice.eml', Buffer.from('the first of two'), 'first');
      if (i === 15) add('pipe/large.p7m', Buffer.alloc(1536 * 1024 + 5, 0x5a), 'large');
      if (i === 20) add('pipe/twice.eml', Buffer.from('the second, which wins'), 'second');
    }
    const r = await post(fields);
    expect(r.status).toBe(201);
    expect(r.body.objects).toEqual(listed);
    for (const [key, bytes] of expected) expect((await read(key))!.equals(bytes)).toBe(true);
    expect((await read('pipe/twice.eml'))!.toString()).toBe('the second, which wins');
  }, 30_000);

  it('when a file fails among files stored beside it, then the answer is its problem and comes after every store begun has ended', async () => {
    const fields: Array<[string, string]> = [];
    for (let i = 0; i < 6; i++)
      fields.push(['key', `side/ok${i}.eml`], ['file', `@${join(dir, 'a')}`]);
    fields.push(['key', 'side/..'], ['file', `@${join(dir, 'a')}`]);
    for (let i = 6; i < 9; i++)
      fields.push(['key', `side/ok${i}.eml`], ['file', `@${join(dir, 'a')}`]);
    const r = await post(fields);
    expect(r.status).toBe(400);
    expect(r.body.type).toMatch(/(validation-failed|invalid-key)$/);
    const listing = async () => {
      const keys: string[] = [];
      for await (const o of store.list('side/')) keys.push(o.key);
      return keys;
    };
    const atAnswer = await listing();
    // Every file before the failing one is stored, and nothing is written after the answer.
    for (let i = 0; i < 6; i++) expect(atAnswer).toContain(`side/ok${i}.eml`);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(await listing()).toEqual(atAnswer);
  }, 30_000);

  it('when the form is not key/file pairs, names a bad key or holds no file, then a problem, and the file it failed in is not stored', async () => {
    const forms: Array<Array<[string, string]>> = [
      [['file', `@${join(dir, 'a')}`]], // a file without its key
      [['key', 'bad/only-key.p7m']], // a key without its file
      [
        ['key', 'bad/first.p7m'],
        ['key', 'bad/second.p7m'],
      ],
      [
        ['key', 'bad/../escape.p7m'],
        ['file', `@${join(dir, 'a')}`],
      ],
      [
        ['key', '.keyward/manifests/forged.jws'], // where Keyward keeps its own objects
        ['file', `@${join(dir, 'a')}`],
      ],
      [['other', 'x']], // no file at all
    ];
    for (const fields of forms) {
      const r = await post(fields);
      expect(r.status).toBe(400);
      expect(r.body.type).toMatch(/(validation-failed|bad-request|invalid-key)$/);
    }
    // The pair before the failure is stored, the failing one is not.
    const r = await post([
      ['key', 'bad/kept.p7m'],
      ['file', `@${join(dir, 'a')}`],
      ['key', 'bad/..'],
      ['file', `@${join(dir, 'b')}`],
    ]);
    expect(r.status).toBe(400);
    expect(await read('bad/kept.p7m')).not.toBeNull();
    const left: string[] = [];
    for await (const o of store.list('bad/')) left.push(o.key);
    expect(left).toEqual(['bad/kept.p7m']);
  }, 30_000);

  it('when another tenant posts the same keys, then they land in its own storage only', async () => {
    const other = await tenantWithKeys(env.app, ssl, []);
    const r = await post(
      [
        ['key', 'many/x/a.p7m'],
        ['file', `@${join(dir, 'b')}`],
      ],
      other.token,
    );
    expect(r.status).toBe(201);
    expect((await read('many/x/a.p7m'))!.toString()).toBe('first file\n');
    const theirs = tenantStore(await env.app.ctx.objectStore.get(), other.tenantId);
    expect((await theirs.head('many/x/a.p7m'))!.size).toBe(300_000);
  }, 30_000);
});
