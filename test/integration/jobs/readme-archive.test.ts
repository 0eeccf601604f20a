/**
 * The "Migrate a PKCS#7 archive" recipe (once the README's, now docs/archive-migration.md), run as
 * written: its shell block is read from that file and run by bash, with `keyward` the checkout's CLI, against the API and a worker
 * process. Before, the recipe logged the administrator in to the archive's tenant (400
 * invalid_grant: the administrator belongs to the platform tenant), and analyze and migrate of a
 * platform login searched the platform tenant's keys ("0 converted, 31 failed,
 * cms-key-not-imported"), naming no tenant.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { ADMIN_PASSWORD } from '../../../support/app.ts';
import { OpenSslDir, makeKey } from '../../../support/fixtures/pkcs7.ts';
import { makeTenant } from '../../../support/auth.ts';
import {
  runKeywardCli,
  spawnWorker,
  startJobsEnv,
  type JobsEnv,
  type WorkerChild,
} from './harness.ts';
import { JOB_PERMISSIONS } from '../../../support/job-permissions.ts';

const root = new URL('../../../', import.meta.url).pathname;
const P12_PASSWORD = 'mailbox keystore password';

/** The first ```sh block of a section of docs/archive-migration.md, where the README's recipe moved. */
function recipe(section: string): string {
  const text = readFileSync(join(root, 'docs/archive-migration.md'), 'utf8');
  const start = text.indexOf(`\n## ${section}\n`);
  expect(start).toBeGreaterThan(-1);
  const block = /```sh\n([\s\S]*?)```/.exec(text.slice(start));
  expect(block).not.toBeNull();
  return block![1];
}

/** Whether a program is on the PATH. */
function onPath(name: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${name}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

describe("the README's archive recipe", () => {
  let env: JobsEnv;
  let worker: WorkerChild;
  let ssl: OpenSslDir;
  let dir: string;
  let bin: string;
  const clearText = 'Subject: the contract\r\n\r\nSigned by someone outside the company.\r\n';

  beforeAll(async () => {
    // The README's administrator e-mail is the one a first start creates by default.
    env = await startJobsEnv({ queue: { KEYWARD_BOOTSTRAP_ADMIN_EMAIL: 'admin@keyward.local' } });
    worker = await spawnWorker(env.workerEnv());
    ssl = new OpenSslDir();
    dir = mkdtempSync(join(tmpdir(), 'keyward-readme-archive-'));
    // A partner's CA and a sender it certified (outside the company: no key of theirs is imported).
    makeKey(ssl, 'partners-root-ca', 'ec-p256');
    ssl.run(
      ['req', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'].concat([
        '-keyout',
        'alice.key',
        '-out',
        'alice.csr',
        '-subj',
        '/CN=alice/O=Partner',
      ]),
    );
    ssl.run(
      ['x509', '-req', '-in', 'alice.csr', '-CA', 'partners-root-ca.crt'].concat([
        '-CAkey',
        'partners-root-ca.key',
        '-CAcreateserial',
        '-days',
        '30',
        '-out',
        'alice.crt',
      ]),
    );
    // The mailbox's own key, as a PKCS#12 file.
    makeKey(ssl, 'mailbox', 'rsa-2048');
    ssl.run(
      ['pkcs12', '-export', '-inkey', 'mailbox.key', '-in', 'mailbox.crt'].concat([
        '-out',
        'recipients.p12',
        '-passout',
        `pass:${P12_PASSWORD}`,
      ]),
    );
    ssl.write('mail.txt', Buffer.from(clearText));
    const signed = ssl.run(
      ['smime', '-sign', '-nodetach', '-in', 'mail.txt'].concat([
        '-signer',
        'alice.crt',
        '-inkey',
        'alice.key',
      ]),
    );
    const encrypted = ssl.run(['smime', '-encrypt', '-aes256', '-in', 'mail.txt', 'mailbox.crt']);
    mkdirSync(join(dir, 'archive', 'inbox'), { recursive: true });
    writeFileSync(join(dir, 'archive', 'inbox', '0001.eml'), signed);
    writeFileSync(join(dir, 'archive', 'inbox', '0002.eml'), encrypted);
    writeFileSync(join(dir, 'recipients.p12'), ssl.read('recipients.p12'));
    writeFileSync(join(dir, 'partners-root-ca.pem'), ssl.read('partners-root-ca.crt'));
    // `keyward` is the checkout's CLI; jq is the README's, stood in for where it is not installed.
    bin = join(dir, 'bin');
    mkdirSync(bin);
    writeFileSync(
      join(bin, 'keyward'),
      `#!/bin/sh\nexec "${process.execPath}" "${join(root, 'bin/keyward.js')}" "$@"\n`,
      { mode: 0o755 },
    );
    if (!onPath('jq'))
      writeFileSync(
        join(bin, 'jq'),
        `#!${process.execPath}\nlet t='';process.stdin.on('data',(c)=>t+=c).on('end',()=>{const f=process.argv[3].slice(1);process.stdout.write(String(JSON.parse(t)[f])+'\\n')});\n`,
        { mode: 0o755 },
      );
  }, 120_000);

  afterAll(async () => {
    await worker?.stop();
    await env?.close();
    ssl?.cleanup();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('when the recipe is run as written, then every step succeeds in the archive tenant and the converted mail verifies with the archive key', async () => {
    const script = recipe('Migrate a PKCS#7 archive');
    const run = await new Promise<{ code: number | null; out: string }>((resolve) => {
      const child = spawn('bash', ['-euo', 'pipefail', '-c', script], {
        cwd: dir,
        env: {
          ...process.env,
          PATH: `${bin}${delimiter}${process.env.PATH}`,
          KEYWARD_CONFIG_DIR: join(dir, 'config'),
          KEYWARD_URL: env.app.url,
          PLATFORM_TENANT: env.app.platformTenantId,
          KEYWARD_PASSWORD: ADMIN_PASSWORD,
          KEYWARD_KEYSTORE_PASSWORD: P12_PASSWORD,
          KEYWARD_TENANT: '',
          KEYWARD_PROFILE: '',
          KEYWARD_CLIENT_ID: '',
          KEYWARD_CLIENT_SECRET: '',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      child.stdout.on('data', (c: Buffer) => (out += c.toString()));
      child.stderr.on('data', (c: Buffer) => (out += c.toString()));
      child.once('close', (code) => resolve({ code, out }));
    });
    expect([run.code, run.out]).toEqual([0, expect.stringContaining('valid')]);
    expect(run.out).toContain('2 files: 2 converted, 0 failed, 0 skipped');
    // The signed mail's content and the encrypted mail's JWE are on disk.
    expect(readFileSync(join(dir, 'converted', 'inbox', '0001.eml.content'), 'utf8')).toContain(
      'Signed by someone outside the company.',
    );
    expect(existsSync(join(dir, 'converted', 'inbox', '0002.eml.jwe'))).toBe(true);
  }, 240_000);

  it('when the archive is migrated by a workload of a tenant without its keys, then each failure names the tenant searched', async () => {
    const elsewhere = await makeTenant(env.app, JOB_PERMISSIONS);
    const r = await runKeywardCli(
      ['migrate', join(dir, 'archive'), '--out', join(dir, 'elsewhere'), '--poll', '100'],
      {
        KEYWARD_CONFIG_DIR: join(dir, 'none'),
        KEYWARD_URL: env.app.url,
        KEYWARD_CLIENT_ID: elsewhere.clientId,
        KEYWARD_CLIENT_SECRET: elsewhere.clientSecret,
        KEYWARD_TENANT: '',
        KEYWARD_PROFILE: '',
      },
    );
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      `failed: inbox/0002.eml: cms-key-not-imported: the recipient key is not imported in tenant ${elsewhere.tenantId}`,
    );
  }, 120_000);
});
