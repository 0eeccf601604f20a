/**
 * The `keyward` CLI as a user runs it (`node bin/keyward.js`, a child process) against the API
 * and a worker process: a directory migrates end to end with progress on stderr, results in
 * --out, a summary, and a second run skips what the first finished. The client's token renewal
 * (60 s before expiry, or on a 401) is checked against a stub server.
 */
import { createPublicKey, randomBytes } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { Readable } from 'node:stream';
import { join } from 'node:path';
import { flattenedVerify, generalDecrypt } from 'jose';
import { KeywardClient } from '../../../bin/lib/client.ts';
import { OpenSslDir, makeKey, type TestKey } from '../../../support/fixtures/pkcs7.ts';
import { makeTenant, workloadToken } from '../../../support/auth.ts';
import { importKeystore } from '../../../api/services/keys/import.ts';
import { createKey } from '../../../api/services/keys/store.ts';
import { deserializeMaterial } from '../../../shared/crypto/material-codec.ts';
import { openJson } from '../../support/independent-hpke.ts';
import { tenantStore } from '../../../shared/storage/index.ts';
import {
  runKeywardCli,
  spawnWorker,
  startJobsEnv,
  upload,
  type JobsEnv,
  type WorkerChild,
} from './harness.ts';
import { cms } from '../../../support/fixtures/cms.ts';
import { JOB_PERMISSIONS } from '../../../support/job-permissions.ts';
import { waitForMigration } from '../durable-migration/support.ts';

const runCli = runKeywardCli;

describe('keyward CLI against the service (real Redis, s3rver, worker process)', () => {
  let env: JobsEnv;
  let ssl: OpenSslDir;
  let key: TestKey;
  let worker: WorkerChild;
  let dir: string;
  let cliEnv: Record<string, string>;
  let tenantId: string;
  const tokenFor = () =>
    workloadToken(env.app, {
      clientId: cliEnv.KEYWARD_CLIENT_ID,
      clientSecret: cliEnv.KEYWARD_CLIENT_SECRET,
    });
  const content = randomBytes(200_000);

  beforeAll(async () => {
    ssl = new OpenSslDir();
    key = makeKey(ssl, 'cli-signer', 'ec-p256');
    env = await startJobsEnv();
    const t = await makeTenant(env.app, JOB_PERMISSIONS);
    tenantId = t.tenantId;
    await importKeystore(env.app.ctx, t.tenantId, {
      data: Buffer.concat([ssl.read(key.keyFile), ssl.read(key.certFile)]),
      kid: key.kid,
    });
    worker = await spawnWorker(env.workerEnv());
    cliEnv = {
      KEYWARD_URL: env.app.url,
      KEYWARD_CLIENT_ID: t.clientId,
      KEYWARD_CLIENT_SECRET: t.clientSecret,
    };
    dir = mkdtempSync(join(tmpdir(), 'keyward-cli-'));
    ssl.write('content.bin', content);
    const signed = cms.sign(ssl, 'content.bin', {
      by: key,
      detached: false,
      binary: true,
      outform: 'DER',
    });
    mkdirSync(join(dir, 'src', 'nested'), { recursive: true });
    writeFileSync(join(dir, 'src', 'a.p7m'), signed);
    writeFileSync(join(dir, 'src', 'nested', 'b.p7m'), signed);
    writeFileSync(join(dir, 'src', 'nested', 'c.p7m'), signed);
    writeFileSync(join(dir, 'src', 'broken.p7m'), randomBytes(1000));
  }, 60_000);

  afterAll(async () => {
    await worker?.stop();
    await env?.close();
    ssl?.cleanup();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('when a directory is migrated, then results land in --out, progress goes to stderr, the summary reports the failure, and a re-run skips finished files', async () => {
    const out = join(dir, 'out');
    const first = await runCli(
      [
        'migrate',
        join(dir, 'src'),
        '--out',
        out,
        '--poll',
        '100',
        '--progress-interval',
        '200',
        '-c',
        '3',
      ],
      cliEnv,
    );
    expect(first.code).toBe(1);
    expect(first.stderr).toMatch(
      /files 4\/4, 1 failed \| 60\d\.\d KB\/60\d\.\d KB \| .*\/s \| ETA 0:00/,
    );
    expect(first.stderr).toContain('failed: broken.p7m: cms-malformed');
    expect(first.stdout).toMatch(/nested\/b\.p7m\s+converted/);
    expect(first.stdout).toContain('4 files: 3 converted, 1 failed, 0 skipped');
    for (const f of ['a.p7m.jws.json', 'nested/b.p7m.jws.json', 'nested/c.p7m.jws.json']) {
      const jws = JSON.parse(readFileSync(join(out, f), 'utf8'));
      // Nothing lost: the signed content lands beside its JWS, and the JWS verifies over it.
      const stored = readFileSync(join(out, f.replace(/\.jws\.json$/, '.content')));
      expect(stored.equals(content)).toBe(true);
      await expect(
        flattenedVerify({ ...jws, payload: stored }, createPublicKey(key.privateKey)),
      ).resolves.toBeTruthy();
    }
    expect(existsSync(join(out, 'broken.p7m.jws.json'))).toBe(false);
    const summary = JSON.parse(readFileSync(join(out, 'keyward-migrate-summary.json'), 'utf8'));
    expect(summary).toMatchObject({ files: 4, converted: 3, failed: 1, skipped: 0 });
    expect(summary.rows.find((r: { file: string }) => r.file === 'broken.p7m')).toMatchObject({
      status: 'failed',
      problem: { slug: 'cms-malformed' },
    });
    expect(readFileSync(join(out, 'keyward-migrate-summary.txt'), 'utf8')).toContain(
      '3 converted, 1 failed',
    );

    const second = await runCli(
      ['migrate', join(dir, 'src'), '--out', out, '--poll', '100', '--progress-interval', '200'],
      cliEnv,
    );
    expect(second.code).toBe(1);
    expect(second.stdout).toContain('4 files: 0 converted, 1 failed, 3 skipped');
    // The resumed run counts over the whole set: the three converted before are done already.
    expect(second.stderr).toMatch(
      /files 4\/4, 1 failed, 3 done before \| 60\d\.\d KB\/60\d\.\d KB/,
    );
  }, 60_000);

  it('when --cleanup is given, then results land on disk with their content and nothing of the run stays in the service storage', async () => {
    const out = join(dir, 'out-clean');
    const r = await runCli(
      [
        'migrate',
        join(dir, 'src', 'nested'),
        '--out',
        out,
        '--cleanup',
        '--remote-prefix',
        'cleanup-run/',
        '--poll',
        '100',
      ],
      cliEnv,
    );
    expect(r.code).toBe(0);
    for (const f of ['b.p7m', 'c.p7m']) {
      expect(readFileSync(join(out, `${f}.content`)).equals(content)).toBe(true);
      expect(existsSync(join(out, `${f}.jws.json`))).toBe(true);
    }
    const left: string[] = [];
    for await (const o of tenantStore(await env.app.ctx.objectStore.get(), tenantId).list(
      'cleanup-run/',
    ))
      left.push(o.key);
    expect(left).toEqual([]);
  }, 60_000);

  /**
   * What a run stopped after its migration started leaves: the files of src/nested uploaded
   * under `<base>in/first/`, a migration over them, and the state file under `out` naming both.
   */
  async function interruptedRun(base: string, out: string) {
    const src = join(dir, 'src', 'nested');
    const token = await tokenFor();
    const files: Record<string, unknown> = {};
    for (const rel of ['b.p7m', 'c.p7m']) {
      const bytes = readFileSync(join(src, rel));
      const put = await upload(env.app, token, `${base}in/first/${rel}`, bytes);
      expect(put.status).toBe(201);
      const st = statSync(join(src, rel));
      files[rel] = {
        size: st.size,
        mtimeMs: st.mtimeMs,
        status: 'submitted',
        remoteKey: `${base}in/first/${rel}`,
      };
    }
    const created = await fetch(`${env.app.url}/api/v3/migration/migrations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        source: { prefix: `${base}in/first/` },
        output: { prefix: `${base}out/` },
      }),
    });
    expect(created.status).toBe(202);
    const { id } = (await created.json()) as { id: string };
    mkdirSync(out);
    writeFileSync(
      join(out, '.keyward-migrate-state.json'),
      JSON.stringify({ version: 1, url: env.app.url, source: src, migration: id, files }),
    );
    return { src, token, id };
  }

  it('when a run was interrupted after its migration started, then the next run takes those files from that migration and uploads nothing again', async () => {
    const out = join(dir, 'out-resumed');
    const { src } = await interruptedRun('resumed/', out);
    const r = await runCli(
      ['migrate', src, '--out', out, '--remote-prefix', 'resumed/', '--poll', '100'],
      cliEnv,
    );
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('2 files: 2 converted, 0 failed, 0 skipped');
    for (const f of ['b.p7m', 'c.p7m'])
      expect(readFileSync(join(out, `${f}.content`)).equals(content)).toBe(true);
    const uploads: string[] = [];
    for await (const o of tenantStore(await env.app.ctx.objectStore.get(), tenantId).list(
      'resumed/in/',
    ))
      uploads.push(o.key);
    expect(uploads.sort()).toEqual(['resumed/in/first/b.p7m', 'resumed/in/first/c.p7m']);
    const state = JSON.parse(readFileSync(join(out, '.keyward-migrate-state.json'), 'utf8'));
    expect(state.migration).toBeUndefined();
  }, 60_000);

  it('when an output in the service storage no longer matches the report, then that file fails and nothing of it lands under --out', async () => {
    const out = join(dir, 'out-tampered');
    const { src, token, id } = await interruptedRun('tampered/', out);
    await waitForMigration(env.app, token, id, 'completed');
    // The stored JWS of c.p7m changes after the ledger recorded it: same length, other bytes.
    const store = tenantStore(await env.app.ctx.objectStore.get(), tenantId);
    let key = '';
    for await (const o of store.list('tampered/out/'))
      if (o.key.endsWith('c.p7m.jws.json')) key = o.key;
    const parts: Buffer[] = [];
    for await (const c of await store.get(key)) parts.push(c as Buffer);
    const jws = Buffer.concat(parts);
    jws[jws.length - 3] ^= 1;
    await store.put(key, Readable.from([jws]));
    const r = await runCli(
      ['migrate', src, '--out', out, '--remote-prefix', 'tampered/', '--poll', '100'],
      cliEnv,
    );
    expect(r.stdout).toContain('2 files: 1 converted, 1 failed, 0 skipped');
    expect(r.stderr).toContain('differs from what the service recorded');
    expect(existsSync(join(out, 'b.p7m.jws.json'))).toBe(true);
    expect(existsSync(join(out, 'c.p7m.jws.json'))).toBe(false);
  }, 60_000);

  it('when the source is s3://bucket/prefix of objects the service holds, then one batch converts them and the results are downloaded', async () => {
    const signed = readFileSync(join(dir, 'src', 'a.p7m'));
    for (const name of ['s3in/x.p7m', 's3in/sub/y.p7m'])
      expect((await upload(env.app, await tokenFor(), name, signed)).status).toBe(201);
    const out = join(dir, 'out-s3');
    const r = await runCli(
      ['migrate', `s3://${env.s3.bucket}/s3in/`, '--out', out, '--poll', '100'],
      cliEnv,
    );
    expect(r.stderr).toMatch(/files 2\/2 \|/);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('2 files: 2 converted, 0 failed, 0 skipped');
    for (const f of ['x.p7m.jws.json', 'sub/y.p7m.jws.json']) {
      expect(readFileSync(join(out, f.replace(/\.jws\.json$/, '.content'))).equals(content)).toBe(
        true,
      );
      const jws = JSON.parse(readFileSync(join(out, f), 'utf8'));
      await expect(
        flattenedVerify({ ...jws, payload: content }, createPublicKey(key.privateKey)),
      ).resolves.toBeTruthy();
    }
    const again = await runCli(
      ['migrate', `s3://${env.s3.bucket}/s3in/`, '--out', out, '--poll', '100'],
      cliEnv,
    );
    expect(again.stdout).toContain('2 files: 0 converted, 0 failed, 2 skipped');
  }, 30_000);

  it('when a file is analyzed, then the analyzer answer is printed as JSON', async () => {
    const r = await runCli(['analyze', join(dir, 'src', 'a.p7m')], cliEnv);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({
      contentType: 'signedData',
      convertible: true,
      signers: [expect.objectContaining({ kid: key.kid })],
    });
  });

  it('when a clear-signed mail and a PEM file are analyzed, then the answer names their container form', async () => {
    ssl.write('note.txt', Buffer.from('a signed note\n'));
    const eml = cms.sign(ssl, 'note.txt', { by: key });
    const pem = ssl.run([
      'cms',
      '-cmsout',
      '-inform',
      'DER',
      '-in',
      join(dir, 'src', 'a.p7m'),
      '-outform',
      'PEM',
    ]);
    writeFileSync(join(dir, 'note.eml'), eml);
    writeFileSync(join(dir, 'a.pem'), pem);
    for (const [file, container] of [
      ['note.eml', 'multipart-signed'],
      ['a.pem', 'pem'],
    ]) {
      const r = await runCli(['analyze', join(dir, file)], cliEnv);
      expect([file, r.code, r.stderr]).toEqual([file, 0, '']);
      expect(JSON.parse(r.stdout)).toMatchObject({
        contentType: 'signedData',
        container,
        convertible: true,
      });
    }
  });

  it('when --cleanup meets a file that fails, then its upload is removed too and the run says so', async () => {
    const out = join(dir, 'out-clean-failed');
    const r = await runCli(
      [
        'migrate',
        join(dir, 'src'),
        '--out',
        out,
        '--cleanup',
        '--remote-prefix',
        'cleanup-failed/',
        '--poll',
        '100',
      ],
      cliEnv,
    );
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('the uploads of 1 failed file(s) removed too');
    const left: string[] = [];
    for await (const o of tenantStore(await env.app.ctx.objectStore.get(), tenantId).list(
      'cleanup-failed/',
    ))
      left.push(o.key);
    expect(left).toEqual([]);
  }, 60_000);

  it('when analyze and migrate are given --profile, then they use that saved workload login and no credentials from the environment', async () => {
    const config = { KEYWARD_CONFIG_DIR: join(dir, 'profiles') };
    const login = await runCli(
      ['login', '--url', env.app.url, '--client-id', cliEnv.KEYWARD_CLIENT_ID, '--profile', 'mig'],
      { ...config, KEYWARD_CLIENT_SECRET: cliEnv.KEYWARD_CLIENT_SECRET },
    );
    expect(login.code).toBe(0);
    const bare = { ...config, KEYWARD_URL: '', KEYWARD_CLIENT_ID: '', KEYWARD_CLIENT_SECRET: '' };
    const analyzed = await runCli(['analyze', join(dir, 'src', 'a.p7m'), '--profile', 'mig'], bare);
    expect([analyzed.code, analyzed.stderr]).toEqual([0, '']);
    expect(JSON.parse(analyzed.stdout)).toMatchObject({ contentType: 'signedData' });
    const migrated = await runCli(
      [
        'migrate',
        join(dir, 'src', 'nested'),
        '--out',
        join(dir, 'out-profile'),
        '--profile',
        'mig',
        '--poll',
        '100',
      ],
      bare,
    );
    expect(migrated.code).toBe(0);
    expect(migrated.stdout).toContain('2 files: 2 converted');
    // Another profile name is another login: not found, exit 2.
    const other = await runCli(['analyze', join(dir, 'src', 'a.p7m'), '--profile', 'nobody'], bare);
    expect(other.code).toBe(2);
    expect(other.stderr).toContain('profile nobody');
  }, 60_000);

  it('when configuration is missing, then the CLI says which variable and exits 2', async () => {
    const r = await runCli(['migrate', dir, '--out', join(dir, 'x')], {
      KEYWARD_CONFIG_DIR: join(dir, 'no-config'),
      KEYWARD_URL: '',
      KEYWARD_CLIENT_ID: '',
      KEYWARD_CLIENT_SECRET: '',
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('KEYWARD_URL');
  });

  it('when --target-kid names two keys, then each result opens with either key (jose, and keyward open)', async () => {
    const a = makeKey(ssl, 'cli-target-a', 'rsa-2048');
    const b = makeKey(ssl, 'cli-target-b', 'ec-p256');
    for (const k of [a, b])
      await importKeystore(env.app.ctx, tenantId, {
        data: Buffer.concat([ssl.read(k.keyFile), ssl.read(k.certFile)]),
        kid: k.kid,
        usage: 'encrypt',
      });
    const src = join(dir, 'src-targets');
    mkdirSync(src);
    writeFileSync(
      join(src, 'mail.p7m'),
      cms.encrypt(ssl, 'content.bin', { to: a, binary: true, outform: 'DER' }),
    );
    const out = join(dir, 'out-targets');
    const r = await runCli(
      ['migrate', src, '--out', out, '--poll', '100', '--target-kid', 'cli-target-a,cli-target-b'],
      cliEnv,
    );
    expect(r.code).toBe(0);
    const result = join(out, 'mail.p7m.jwe');
    const stored = readFileSync(result);
    const boundary = /^--([^\r\n]+)\r\n/.exec(stored.toString('latin1'))![1];
    const parts = stored.toString('latin1').split(`--${boundary}`);
    const header = JSON.parse(parts[1].split('\r\n\r\n')[1].trimEnd());
    expect(header.recipients).toHaveLength(2);
    const body = Buffer.from(parts[2].slice(parts[2].indexOf('\r\n\r\n') + 4, -2), 'latin1');
    const jwe = {
      ...header,
      ciphertext: body.subarray(0, body.length - 16).toString('base64url'),
      tag: body.subarray(body.length - 16).toString('base64url'),
    };
    for (const k of [a, b])
      expect(Buffer.from((await generalDecrypt(jwe, k.privateKey)).plaintext).equals(content)).toBe(
        true,
      );
    const opened = join(dir, 'opened.bin');
    const o = await runCli(['open', result, '--key', ssl.path(b.keyFile), '--out', opened], {});
    expect(o.code).toBe(0);
    expect(readFileSync(opened).equals(content)).toBe(true);
  }, 60_000);

  it('when --target-kid names an X-Wing key, then the job writes an HPKE-9-KE recipient that the independent HPKE reader opens', async () => {
    const rsa = makeKey(ssl, 'cli-pq-source', 'rsa-2048');
    await importKeystore(env.app.ctx, tenantId, {
      data: Buffer.concat([ssl.read(rsa.keyFile), ssl.read(rsa.certFile)]),
      kid: rsa.kid,
      usage: 'encrypt',
    });
    await createKey(env.app.ctx, tenantId, {
      kid: 'cli-pq-xwing',
      type: 'x25519-ml-kem-768',
      usage: 'encrypt',
    });
    const src = join(dir, 'src-pq');
    mkdirSync(src);
    writeFileSync(
      join(src, 'mail.p7m'),
      ssl.run([
        'cms',
        '-encrypt',
        '-binary',
        '-in',
        'content.bin',
        '-outform',
        'DER',
        rsa.certFile,
      ]),
    );
    const out = join(dir, 'out-pq');
    const r = await runCli(
      ['migrate', src, '--out', out, '--poll', '100', '--target-kid', 'cli-pq-xwing'],
      cliEnv,
    );
    expect(r.code).toBe(0);
    const stored = readFileSync(join(out, 'mail.p7m.jwe'));
    const boundary = /^--([^\r\n]+)\r\n/.exec(stored.toString('latin1'))![1];
    const parts = stored.toString('latin1').split(`--${boundary}`);
    const header = JSON.parse(parts[1].split('\r\n\r\n')[1].trimEnd());
    expect(header.recipients.map((x: { header: object }) => x.header)).toEqual([
      expect.objectContaining({ alg: 'HPKE-9-KE', kid: 'cli-pq-xwing#1' }),
    ]);
    const body = Buffer.from(parts[2].slice(parts[2].indexOf('\r\n\r\n') + 4, -2), 'latin1');
    const key = await env.app.ctx.keys.get(tenantId, 'cli-pq-xwing');
    const seed = deserializeMaterial(key.material.get(1)!).secret!;
    const plain = await openJson(header, 'cli-pq-xwing#1', seed, {
      ciphertext: body.subarray(0, body.length - 16),
      tag: body.subarray(body.length - 16),
    });
    expect(plain.equals(content)).toBe(true);
  }, 60_000);
});

describe('CLI token renewal (60 s before expiry or on a 401)', () => {
  let server: Server;
  let url: string;
  let issued = 0;
  let revoked = new Set<string>();
  beforeAll(async () => {
    server = createServer((req, res) => {
      if (req.url === '/api/v3/auth/token') {
        issued += 1;
        res.setHeader('content-type', 'application/json');
        res.end(
          JSON.stringify({
            access_token: `token-${issued}`,
            token_type: 'Bearer',
            expires_in: 3600,
          }),
        );
        return;
      }
      const token = (req.headers.authorization ?? '').slice(7);
      res.statusCode = revoked.has(token) ? 401 : 200;
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ token }));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));
  beforeEach(() => {
    issued = 0;
    revoked = new Set();
  });

  it('when the token is more than 60 s from expiry, then it is reused; within 60 s, then it is renewed', async () => {
    let now = 1_000_000;
    const client = new KeywardClient({
      url,
      clientId: 'id',
      clientSecret: 'secret',
      now: () => now,
    });
    expect((await client.json('GET', '/x')).token).toBe('token-1');
    now += 3600_000 - 61_000;
    expect((await client.json('GET', '/x')).token).toBe('token-1');
    now += 2_000;
    expect((await client.json('GET', '/x')).token).toBe('token-2');
    expect(client.tokensIssued).toBe(2);
  });

  it('when a request answers 401, then the token is renewed and the request sent again once', async () => {
    const client = new KeywardClient({ url, clientId: 'id', clientSecret: 'secret' });
    expect((await client.json('GET', '/x')).token).toBe('token-1');
    revoked.add('token-1');
    expect((await client.json('GET', '/x')).token).toBe('token-2');
    revoked.add('token-2');
    revoked.add('token-3');
    await expect(client.json('GET', '/x')).rejects.toMatchObject({ status: 401 });
  });
});
