/**
 * `keyward admin master-key`, `keyward backup` and `keyward restore` as an operator runs them
 * (a child process per command): the passphrase comes from KEYWARD_BACKUP_PASSPHRASE, never an
 * argument; the backup file is written whole (mode 0600); the restore reports what it restored
 * and refuses to run twice into the same database.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startTestApp, type TestApp } from '../../../support/app.ts';
import {
  SHARED_POSTGRES_URL,
  createPostgresDatabase,
  type TestDatabase,
} from '../../../support/database.ts';

const root = new URL('../../../', import.meta.url).pathname;
const PASSPHRASE = 'an operator passphrase';

function runCli(args: string[], env: Record<string, string>, input = '') {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, [join(root, 'bin/keyward.js'), ...args], {
      env: { ...process.env, KEYWARD_URL: '', KEYWARD_PROFILE: '', KEYWARD_MASTER_KEY: '', ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.once('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(input);
  });
}

describe('keyward backup, restore and admin master-key', () => {
  let app: TestApp;
  let dir: string;
  let target: TestDatabase;
  let env: Record<string, string>;

  beforeAll(async () => {
    app = await startTestApp();
    dir = mkdtempSync(join(tmpdir(), 'keyward-backup-cli-'));
    env = { KEYWARD_CONFIG_DIR: join(dir, 'cfg'), KEYWARD_BACKUP_PASSPHRASE: PASSPHRASE };
    target = await createPostgresDatabase(SHARED_POSTGRES_URL);
    const login = await runCli(
      ['login', '--url', app.url, '--email', ADMIN_EMAIL, '--tenant', app.platformTenantId],
      env,
      `${ADMIN_PASSWORD}\n`,
    );
    expect(login.code).toBe(0);
  });
  afterAll(async () => {
    await app?.stop();
    await target?.drop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('when the status and a rewrap are asked for, then they print the ids and end with nothing left to rewrap', async () => {
    const status = await runCli(['admin', 'master-key', 'status', '--output', 'json'], env);
    expect(status.code).toBe(0);
    expect(JSON.parse(status.stdout).keyring[0]).toMatchObject({ newest: true });
    const rewrap = await runCli(['admin', 'master-key', 'rewrap'], env);
    expect([rewrap.code, rewrap.stdout]).toEqual([
      0,
      expect.stringContaining('every item is sealed under the newest id'),
    ]);
    // Ends with a new line: before, the last line was glued to whatever came next.
    const table = await runCli(['admin', 'master-key', 'status'], env);
    expect([table.code, table.stdout]).toEqual([0, expect.stringMatching(/newest id[^\n]*\n$/)]);
  }, 60_000);

  it('when a backup is written and restored, then the file is whole and private and the restore reports its tables; a second restore is refused', async () => {
    const file = join(dir, 'all.kwbackup');
    const backup = await runCli(['backup', '--out', file], env);
    expect([backup.code, backup.stderr]).toEqual([0, '']);
    expect(backup.stdout).toContain(`wrote ${file}`);
    expect(backup.stdout).toMatch(/restoring needs all three\.\n$/);
    expect(statSync(file).mode & 0o777).toBe(0o600);

    const restore = await runCli(['restore', file, '--database-url', target.url!], env);
    expect([restore.code, restore.stderr]).toEqual([0, '']);
    expect(restore.stdout).toMatch(/restored \d+ rows of \d+ tables/);
    expect(restore.stdout).toContain('signing_keys');
    expect(restore.stdout).toMatch(/\n$/);

    const again = await runCli(['restore', file, '--database-url', target.url!], env);
    expect(again.code).not.toBe(0);
    expect(again.stderr).toContain('not empty');
    const usage = await runCli(['restore', file], env);
    expect([usage.code, usage.stderr]).toEqual([2, expect.stringContaining('--database-url')]);
  }, 90_000);
});
