/**
 * The `keyward` admin and crypto CLI as an operator runs it (a child process per command) against
 * the real API: the platform administrator logs in, creates a tenant, a role and a workload, the
 * workload logs in from another config dir, a key is created, a file is encrypted and decrypted
 * back, the key rotates and the old ciphertext still decrypts, and the audit chain verifies. Plus
 * the exit codes scripts rely on (1 refused, 2 usage) and `--help` on a subcommand, and the
 * renewal of a cached login (in process, with a clock).
 */
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeProtectedHeader } from 'jose';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startTestApp, type TestApp } from '../../../support/app.ts';
import { CredentialStore, Session, SessionError, login } from '../../../bin/lib/session.ts';

const root = new URL('../../../', import.meta.url).pathname;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  bytes: Buffer;
}

/** Runs `keyward ...` as a child process with `env` added and `input` on stdin. */
function runCli(args: string[], env: Record<string, string>, input = ''): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(root, 'bin/keyward.js'), ...args], {
      env: {
        ...process.env,
        KEYWARD_URL: '',
        KEYWARD_TENANT: '',
        KEYWARD_PROFILE: '',
        KEYWARD_CLIENT_ID: '',
        KEYWARD_CLIENT_SECRET: '',
        KEYWARD_PASSWORD: '',
        ...env,
      },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => out.push(c));
    child.stderr.on('data', (c: Buffer) => {
      stderr += c.toString();
    });
    child.once('close', (code) =>
      resolve({
        code,
        stdout: Buffer.concat(out).toString('utf8'),
        stderr,
        bytes: Buffer.concat(out),
      }),
    );
    child.stdin.end(input);
  });
}

describe('keyward admin and crypto CLI against the service', () => {
  let app: TestApp;
  let dir: string;
  let admin: Record<string, string>;
  let workload: Record<string, string>;
  let tenantId: string;
  let workloadCredentials: { clientId: string; clientSecret: string };

  beforeAll(async () => {
    app = await startTestApp();
    dir = mkdtempSync(join(tmpdir(), 'keyward-admin-cli-'));
    admin = { KEYWARD_CONFIG_DIR: join(dir, 'admin') };
    workload = { KEYWARD_CONFIG_DIR: join(dir, 'workload') };
  });

  afterAll(async () => {
    await app?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('when an operator drives tenant, role, workload, key, encrypt, rotate and audit verify, then each step works and the old ciphertext still decrypts', async () => {
    // The password comes on stdin, never on the command line; the cache keeps tokens only, mode 0600.
    const login = await runCli(
      ['login', '--url', app.url, '--email', ADMIN_EMAIL, '--tenant', app.platformTenantId],
      admin,
      `${ADMIN_PASSWORD}\n`,
    );
    expect([login.code, login.stderr]).toEqual([0, '']);
    expect(login.stdout).toContain(`as ${ADMIN_EMAIL} (tenant ${app.platformTenantId})`);
    const cache = join(admin.KEYWARD_CONFIG_DIR, 'credentials.json');
    expect(statSync(cache).mode & 0o777).toBe(0o600);
    expect(readFileSync(cache, 'utf8')).not.toContain(ADMIN_PASSWORD);

    const tenant = await runCli(['tenants', 'create', 'acme', '--output', 'json'], admin);
    expect(tenant.code).toBe(0);
    tenantId = JSON.parse(tenant.stdout).id;
    expect(JSON.parse(tenant.stdout)).toMatchObject({ name: 'acme', status: 'active' });

    const role = await runCli(
      [
        'roles',
        'create',
        'app',
        '--tenant',
        tenantId,
        '--permission',
        'crypto.encrypt,crypto.decrypt',
        '--permission',
        'audit.verify',
        '--output',
        'json',
      ],
      admin,
    );
    expect(role.code).toBe(0);
    const roleId = JSON.parse(role.stdout).id;

    const registered = await runCli(
      ['workloads', 'create', 'billing', '--tenant', tenantId, '--role', roleId],
      admin,
    );
    expect(registered.code).toBe(0);
    expect(registered.stderr).toContain('shown only now');
    const field = (name: string) =>
      new RegExp(`^${name}:\\s+(\\S+)$`, 'm').exec(registered.stdout)?.[1] ?? '';
    const [clientId, clientSecret] = [field('clientId'), field('clientSecret')];
    expect(clientSecret).toMatch(/^[0-9a-f-]{36}$/);
    workloadCredentials = { clientId, clientSecret };
    expect(registered.stdout).toMatch(/\n$/);

    const wl = await runCli(['login', '--url', app.url, '--client-id', clientId], {
      ...workload,
      KEYWARD_CLIENT_SECRET: clientSecret,
    });
    expect([wl.code, wl.stderr]).toEqual([0, '']);

    const key = await runCli(
      ['keys', 'create', '--tenant', tenantId, '--type', 'aes-256', '--kid', 'orders'],
      admin,
    );
    expect(key.code).toBe(0);
    expect(key.stdout).toMatch(/^kid:\s+orders$/m);
    expect(key.stdout).toMatch(/^currentVersion:\s+1$/m);

    const plain = randomBytes(3000);
    writeFileSync(join(dir, 'plain.bin'), plain);
    const enc = await runCli(
      [
        'encrypt',
        'orders',
        '--in',
        join(dir, 'plain.bin'),
        '--out',
        join(dir, 'v1.jwe'),
        '--context',
        'app=billing',
      ],
      workload,
    );
    expect([enc.code, enc.stderr]).toEqual([0, '']);
    const jwe = readFileSync(join(dir, 'v1.jwe'), 'utf8').trim();
    expect(decodeProtectedHeader(jwe).kid).toMatch(/^orders/);

    const dec = await runCli(
      [
        'decrypt',
        '--in',
        join(dir, 'v1.jwe'),
        '--out',
        join(dir, 'back.bin'),
        '--context',
        'app=billing',
      ],
      workload,
    );
    expect([dec.code, dec.stderr]).toEqual([0, '']);
    expect(readFileSync(join(dir, 'back.bin')).equals(plain)).toBe(true);

    const rotated = await runCli(
      ['keys', 'rotate', 'orders', '--tenant', tenantId, '--output', 'json'],
      admin,
    );
    expect(rotated.code).toBe(0);
    expect(JSON.parse(rotated.stdout)).toMatchObject({ kid: 'orders', currentVersion: 2 });

    // After the rotation the version-1 ciphertext, read from stdin and written to stdout, still opens.
    const old = await runCli(['decrypt', '--context', 'app=billing'], workload, jwe);
    expect([old.code, old.stderr]).toEqual([0, '']);
    expect(old.bytes.equals(plain)).toBe(true);

    const verified = await runCli(['audit', 'verify'], workload);
    expect([verified.code, verified.stderr]).toEqual([0, '']);
    expect(verified.stdout).toMatch(/^valid audit chain: \d+ events checked/);
  }, 90_000);

  it('when an operator creates, lists and deletes a workload access key, then the secret is shown once and never listed', async () => {
    const list = await runCli(
      ['workloads', 'list', '--tenant', tenantId, '--output', 'json'],
      admin,
    );
    const workloadId = (JSON.parse(list.stdout).items as Array<{ id: string }>)[0].id;
    const keys = (...args: string[]) =>
      runCli(['workloads', 'access-keys', ...args, '--tenant', tenantId], admin);
    const created = await keys('create', workloadId, '--output', 'json');
    expect(created.code).toBe(0);
    expect(created.stderr).toContain('shown only now');
    const { accessKeyId, secretAccessKey } = JSON.parse(created.stdout);
    expect(accessKeyId).toMatch(/^KWAK[A-Z2-7]{16}$/);
    expect(secretAccessKey).toHaveLength(40);
    const shown = await keys('create', workloadId);
    expect([shown.code, shown.stdout]).toEqual([
      0,
      expect.stringMatching(/secretAccessKey: +\S{40}\n/),
    ]);
    const second = /^accessKeyId: +(\S+)$/m.exec(shown.stdout)![1];
    expect((await keys('delete', workloadId, second)).code).toBe(0);
    const listed = await keys('list', workloadId);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain(accessKeyId);
    expect(listed.stdout).not.toContain(secretAccessKey);
    expect((await keys('delete', workloadId, accessKeyId)).code).toBe(0);
    expect(JSON.parse((await keys('list', workloadId, '--output', 'json')).stdout)).toEqual({
      items: [],
    });
    expect((await keys('delete', workloadId, accessKeyId)).code).toBe(1);
  });

  it("when an operator asks how a workload connects, then each API's endpoint, the client id and the tenant's Vault mounts are shown, and no token or secret", async () => {
    // The overrides are set over HTTP (the CLI has no policy command), with a login of their own.
    const { accessToken: token } = await login(
      new CredentialStore(join(dir, 'policy')),
      'policy',
      app.url,
      {
        grant_type: 'password',
        username: ADMIN_EMAIL,
        password: ADMIN_PASSWORD,
        tenant_id: app.platformTenantId,
      },
    );
    const put = await fetch(`${app.url}/api/v3/admin/tenants/${tenantId}/policies/overrides`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ vaultTransitMounts: ['sops', 'transit'] }),
    });
    expect(put.status).toBe(200);
    const list = await runCli(
      ['workloads', 'list', '--tenant', tenantId, '--output', 'json'],
      admin,
    );
    const w = (JSON.parse(list.stdout).items as Array<{ id: string; clientId: string }>).find(
      (item) => item.clientId === workloadCredentials.clientId,
    )!;
    const shown = await runCli(['workloads', 'connect', w.id, '--tenant', tenantId], admin);
    expect([shown.code, shown.stderr]).toEqual([0, '']);
    for (const text of [
      `POST ${app.url}/api/v3/auth/token`,
      `client_id=${w.clientId}&client_secret=<client secret>`,
      `Endpoint:    ${app.url}/`,
      `aws --endpoint-url ${app.url} kms`,
      `keyward workloads access-keys create ${w.id} --tenant ${tenantId}`,
      `VAULT_ADDR:    ${app.url}\n`,
      'Mounts:        /v1/sops/, /v1/transit/\n',
      `POST ${app.url}/v1/auth/approle/login`,
      JSON.stringify({ role_id: w.clientId, secret_id: '<client secret>' }),
      'X-Vault-Token',
      `${app.url}/v1/sops/keys/<key name>`,
    ])
      expect(shown.stdout).toContain(text);
    const json = await runCli(
      ['workloads', 'connect', w.id, '--tenant', tenantId, '--output', 'json'],
      admin,
    );
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({
      workload: { id: w.id, clientId: w.clientId, tenantId },
      coreApi: { tokenEndpoint: `POST ${app.url}/api/v3/auth/token` },
      awsKms: { endpoint: `${app.url}/` },
      vaultTransit: {
        vaultAddr: app.url,
        mounts: ['sops', 'transit'],
        mountsFrom: 'policy',
        appRoleLogin: `POST ${app.url}/v1/auth/approle/login`,
        body: { role_id: w.clientId, secret_id: '<client secret>' },
      },
    });
    // The CLI does not know the client secret and sends no credential to the terminal.
    const cached = Object.values(
      JSON.parse(readFileSync(join(admin.KEYWARD_CONFIG_DIR, 'credentials.json'), 'utf8'))
        .profiles as Record<string, { accessToken: string; refreshToken?: string }>,
    ).flatMap((p) => [p.accessToken, p.refreshToken ?? p.accessToken]);
    expect(cached.length).toBeGreaterThan(0);
    for (const out of [shown.stdout, json.stdout]) {
      expect(out).not.toContain(workloadCredentials.clientSecret);
      for (const secret of [token, ...cached]) expect(out).not.toContain(secret);
      expect(out).not.toMatch(/eyJ[\w-]{10,}/);
    }

    // A person who may read workloads but not the tenant's policy: the default mount, said to be one.
    const role = await runCli(
      ['roles', 'create', 'reader', '--tenant', tenantId, '--permission', 'admin.workloads.read'],
      admin,
    );
    const roleId = /^id: +(\S+)$/m.exec(role.stdout)![1];
    const password = 'a long enough reader password 42';
    const user = await runCli(
      ['users', 'create', 'reader@acme.test', '--tenant', tenantId, '--role', roleId],
      { ...admin, KEYWARD_USER_PASSWORD: password },
    );
    expect([user.code, user.stderr]).toEqual([0, '']);
    const reader = { KEYWARD_CONFIG_DIR: join(dir, 'reader') };
    const loggedIn = await runCli(
      ['login', '--url', app.url, '--email', 'reader@acme.test', '--tenant', tenantId],
      reader,
      `${password}\n`,
    );
    expect([loggedIn.code, loggedIn.stderr]).toEqual([0, '']);
    const fallback = await runCli(['workloads', 'connect', w.id], reader);
    expect([fallback.code, fallback.stderr]).toEqual([0, '']);
    expect(fallback.stdout).toMatch(
      /^ {2}Mount: +\/v1\/transit\/ \(the default; this login cannot read the tenant's policy/m,
    );
    expect(fallback.stdout).toContain(`role_id":"${w.clientId}"`);
  }, 30_000);

  it('when --tenant names another tenant than the login, then tenant admin commands act on it and every other command refuses it (exit 2, naming the command and both tenants) instead of acting in the login tenant', async () => {
    // Before, analyze and migrate of a platform login silently searched the platform tenant.
    writeFileSync(join(dir, 'mail.p7m'), randomBytes(64));
    const listed = await runCli(['keys', 'list', '--tenant', tenantId], admin);
    expect([listed.code, listed.stderr]).toEqual([0, '']);
    expect(listed.stdout).toMatch(/^orders\s/m);
    const refusals = [
      [['analyze', join(dir, 'mail.p7m'), '--tenant', tenantId], admin, 'keyward analyze'],
      [['tenants', 'list', '--tenant', tenantId], admin, 'keyward tenants list'],
      [['audit', 'verify', '--tenant', app.platformTenantId], workload, 'keyward audit verify'],
      [
        ['audit', 'verify'],
        { ...workload, KEYWARD_TENANT: app.platformTenantId },
        'keyward audit verify',
      ],
    ] as const;
    for (const [args, env, command] of refusals) {
      const r = await runCli([...args], env);
      expect([args.join(' '), r.code, r.stdout]).toEqual([args.join(' '), 2, '']);
      expect(r.stderr).toContain(`${command} acts in the tenant of its login`);
      expect(r.stderr).toMatch(/--tenant\/KEYWARD_TENANT names [0-9a-f-]{36}/);
    }
    // Naming the login's own tenant is no change, so nothing to refuse.
    const own = await runCli(['audit', 'verify', '--tenant', tenantId], workload);
    expect([own.code, own.stderr]).toEqual([0, '']);
  }, 60_000);

  it('when the administrator logs in naming the tenant it means to work on, then the refusal says it belongs to the platform tenant and how to reach the other one', async () => {
    const r = await runCli(
      ['login', '--url', app.url, '--email', ADMIN_EMAIL, '--tenant', tenantId, '--profile', 'x'],
      admin,
      `${ADMIN_PASSWORD}\n`,
    );
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('(invalid_grant)');
    expect(r.stderr).toContain(`the tenant ${tenantId} is wrong`);
    expect(r.stderr).toContain('a platform administrator to the platform tenant');
  }, 30_000);

  it('when a command that makes no call to the service is given --tenant, then it refuses it (exit 2) instead of ignoring it', async () => {
    for (const args of [
      ['permissions', '--tenant', tenantId],
      ['whoami', '--tenant', tenantId],
      ['verify', 'x.jws', '--content', 'x', '--cert', 'x.pem', '--tenant', tenantId],
    ]) {
      const r = await runCli(args, admin);
      expect([args[0], r.code]).toEqual([args[0], 2]);
      expect(r.stderr).toContain('works locally and acts in no tenant: drop --tenant');
    }
  }, 60_000);

  it('when a workload logs in with --tenant naming another tenant than its own, then the login is refused naming both and nothing of it is kept', async () => {
    const other = { KEYWARD_CONFIG_DIR: join(dir, 'wrong-tenant') };
    const r = await runCli(
      ['login', '--url', app.url, '--client-id', workloadCredentials.clientId].concat([
        '--tenant',
        app.platformTenantId,
      ]),
      { ...other, KEYWARD_CLIENT_SECRET: workloadCredentials.clientSecret },
    );
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`belongs to tenant ${tenantId}`);
    expect(r.stderr).toContain(`names ${app.platformTenantId}`);
    const who = await runCli(['whoami'], other);
    expect(who.code).not.toBe(0);
  }, 60_000);

  it('when a PKCS#12 is imported without --kid, then its kid comes from the certificate (made unique), list shows every usage, and show names the certificate and the archive and trust settings', async () => {
    const p12 = (name: string) => {
      execFileSync(
        'openssl',
        ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '30', '-utf8']
          .concat(['-keyout', join(dir, `${name}.key`), '-out', join(dir, `${name}.crt`)])
          .concat(['-subj', '/CN=Alice Müller/O=Partner/emailAddress=alice@example.com']),
        { stdio: 'ignore' },
      );
      execFileSync(
        'openssl',
        ['pkcs12', '-export', '-inkey', join(dir, `${name}.key`)].concat([
          '-in',
          join(dir, `${name}.crt`),
          '-out',
          join(dir, `${name}.p12`),
          '-passout',
          'pass:p12-pass',
        ]),
        { stdio: 'ignore' },
      );
      return join(dir, `${name}.p12`);
    };
    // `keyward open`'s name for the keystore password works here too.
    const imported = [];
    for (const name of ['alice', 'alice-again']) {
      const r = await runCli(
        ['keys', 'import', p12(name), '--tenant', tenantId, '--output', 'json'],
        {
          ...admin,
          KEYWARD_KEY_PASSWORD: 'p12-pass',
        },
      );
      expect([name, r.code, r.stderr]).toEqual([name, 0, '']);
      imported.push(JSON.parse(r.stdout).keys[0].kid);
    }
    // Before: imported-<uuid>.
    expect(imported).toEqual(['Alice-Muller', 'Alice-Muller-2']);

    const list = await runCli(['keys', 'list', '--tenant', tenantId], admin);
    expect(list.stdout).toMatch(/^Alice-Muller\s+rsa-2048\s+encrypt,sign\s+active/m);

    const show = await runCli(['keys', 'show', 'Alice-Muller', '--tenant', tenantId], admin);
    expect([show.code, show.stderr]).toEqual([0, '']);
    expect(show.stdout).toMatch(/^archiveSigning: +false$/m);
    expect(show.stdout).toMatch(/^trustAnchor: +false$/m);
    expect(show.stdout).toContain('certificate of version 1:');
    expect(show.stdout).toMatch(
      /^ {2}subject: +emailAddress=alice@example.com,O=Partner,CN=Alice Müller$/m,
    );
    expect(show.stdout).toMatch(
      /^ {2}issuer: +emailAddress=alice@example.com,O=Partner,CN=Alice Müller$/m,
    );
    expect(show.stdout).toMatch(/^ {2}serialNumber: +[0-9A-F]+$/m);
    expect(show.stdout).toMatch(/^ {2}notAfter: +\d{4}-\d\d-\d\dT/m);
    const json = JSON.parse(
      (await runCli(['keys', 'show', 'orders', '--tenant', tenantId, '--output', 'json'], admin))
        .stdout,
    );
    expect(json.versions[0]).toMatchObject({ hasCertificate: false, certificate: null });
  }, 60_000);

  it('when a key does not exist, a command line is wrong, or a subcommand is asked for help, then the exit code says which (1, 2, 0)', async () => {
    const missing = await runCli(['keys', 'show', 'no-such-key', '--tenant', tenantId], admin);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('(key-not-found)');

    const usage = await runCli(['keys', 'create', '--tenant', tenantId, '--colour', 'blue'], admin);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain("Unknown option '--colour'");

    const help = await runCli(['keys', 'settings', '--help'], {});
    expect([help.code, help.stderr]).toEqual([0, '']);
    expect(help.stdout).toContain('usage: keyward keys settings <kid> [options]');
    expect(help.stdout).toContain('--min-decryption-version <n>');
  }, 30_000);

  it('when a cached login has expired, then the refresh token renews it and the rotated one is saved; when it cannot be renewed, then a new login is asked for', async () => {
    const store = new CredentialStore(join(dir, 'renewal'));
    const first = await login(store, 'ops', app.url, {
      grant_type: 'password',
      username: ADMIN_EMAIL,
      password: ADMIN_PASSWORD,
      tenant_id: app.platformTenantId,
    });
    const later = first.expiresAt + 1000;
    const session = new Session(store, 'ops', () => later);
    const renewed = await session.token(false);
    expect(renewed).not.toBe(first.accessToken);
    expect(store.get('ops')).toMatchObject({
      accessToken: renewed,
      subject: ADMIN_EMAIL,
      grant: 'password',
      tenantId: app.platformTenantId,
    });
    expect(store.get('ops')!.refreshToken).not.toBe(first.refreshToken);
    expect(statSync(store.file).mode & 0o777).toBe(0o600);

    // The first refresh token was rotated away (RFC 6749 section 10.4): using it again is refused.
    await store.put('stale', { ...first, expiresAt: 0 });
    await expect(new Session(store, 'stale').token(false)).rejects.toThrow(SessionError);
  }, 30_000);
});
