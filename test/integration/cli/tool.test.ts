/**
 * The CLI as a tool (issue 27): packed and installed outside the checkout, `keyward --version`
 * fast and silent on stderr, `keyward permissions` a line each, an unknown permission named with
 * its near ones, no secret among any command's options, and encrypt/decrypt of files of any size
 * (before, a 200 KB file answered 413: the JSON limit, unsaid in --help).
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestApp, type TestApp } from '../../support/app.ts';
import { makeTenant } from '../../support/auth.ts';
import { PERMISSIONS } from '../../../shared/permissions.ts';
import { COMMANDS } from '../../../bin/lib/commands/index.ts';
import type { Command } from '../../../bin/lib/command.ts';
import { createKey } from '../../../api/services/keys/store.ts';

const root = new URL('../../../', import.meta.url).pathname;

interface Run {
  code: number | null;
  stdout: Buffer;
  stderr: string;
}

/** Runs `keyward ...` from the checkout with `env` added. */
function cli(args: string[], env: Record<string, string> = {}, input?: Buffer): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(root, 'bin/keyward.js'), ...args], {
      env: {
        ...process.env,
        KEYWARD_URL: '',
        KEYWARD_PROFILE: '',
        KEYWARD_CLIENT_ID: '',
        KEYWARD_CLIENT_SECRET: '',
        ...env,
      },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => out.push(c));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.once('close', (code) => resolve({ code, stdout: Buffer.concat(out), stderr }));
    child.stdin.end(input ?? '');
  });
}

/**
 * The files `node <args>` loads (every module URL but Node's own), recorded by a load hook
 * (module.registerHooks, this Node 24) into a file, so stdout and stderr stay the command's.
 */
function loadedBy(
  args: string[],
  dir: string,
): { status: number | null; stderr: string; urls: string[] } {
  const log = join(dir, `loaded-${Math.random().toString(36).slice(2)}`);
  const hook = `import { registerHooks } from 'node:module'; import { appendFileSync } from 'node:fs';
registerHooks({ load(url, context, next) { if (!url.startsWith('node:')) appendFileSync(${JSON.stringify(log)}, url + '\\n'); return next(url, context); } });`;
  const r = spawnSync(
    process.execPath,
    ['--import', `data:text/javascript,${encodeURIComponent(hook)}`, ...args],
    { encoding: 'utf8', cwd: dir },
  );
  const urls = existsSync(log) ? readFileSync(log, 'utf8').trimEnd().split('\n') : [];
  return { status: r.status, stderr: r.stderr, urls };
}

describe('keyward installed as a tool', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'keyward-tool-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('when the packed CLI is installed globally outside the checkout, then `keyward --version` answers the version with nothing on stderr, and it and --help load only what they print', () => {
    const tgz = execFileSync(
      process.execPath,
      [join(root, 'scripts/pack-cli.ts'), '--out', join(dir, 'pack')],
      { encoding: 'utf8', cwd: dir },
    )
      .trim()
      .split('\n')
      .pop()!;
    const prefix = join(dir, 'prefix');
    // Bundled dependencies: the install needs no registry.
    execFileSync(
      'npm',
      ['install', '-g', '--prefix', prefix, '--offline', '--no-audit', '--no-fund', join(dir, tgz)],
      { cwd: dir, stdio: 'ignore' },
    );
    const bin = join(prefix, 'bin', 'keyward');
    const version = spawnSync(bin, ['--version'], { encoding: 'utf8', cwd: dir });
    expect([version.status, version.stdout, version.stderr]).toEqual([
      0,
      `${JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version}\n`,
      '',
    ]);
    // The installed code is JavaScript: nothing for the type stripper.
    const pkg = join(prefix, 'lib', 'node_modules', 'keyward');
    expect(existsSync(join(pkg, 'dist', 'bin', 'keyward.js'))).toBe(true);
    expect(existsSync(join(pkg, 'dist', 'bin', 'keyward.ts'))).toBe(false);
    const help = spawnSync(bin, ['permissions'], { encoding: 'utf8', cwd: dir });
    expect([help.status, help.stderr]).toEqual([0, '']);
    // What starts: --version reads package.json and nothing else of the package; --help the
    // command table alone, no command module and no npm package (time it with
    // bench/cli-startup.bench.ts: no timing is asserted on shared cores).
    const shim = join(pkg, 'bin', 'keyward.js');
    const rel = (urls: string[]) => urls.map((u) => u.replace(`file://${pkg}/`, ''));
    const v = loadedBy([shim, '--version'], dir);
    expect([v.status, v.stderr, rel(v.urls)]).toEqual([0, '', ['bin/keyward.js']]);
    const h = loadedBy([shim, '--help'], dir);
    expect([h.status, h.stderr, rel(h.urls)]).toEqual([
      0,
      '',
      [
        'bin/keyward.js',
        'dist/bin/keyward.js',
        'dist/bin/lib/command.js',
        'dist/bin/lib/commands/index.js',
      ],
    ]);
  }, 240_000);

  it('when permissions is run, then the whole catalogue is printed one a line, without a login', async () => {
    const r = await cli(['permissions'], { KEYWARD_CONFIG_DIR: join(dir, 'none') });
    expect([r.code, r.stderr]).toEqual([0, '']);
    expect(r.stdout.toString('utf8').trimEnd().split('\n')).toEqual([...PERMISSIONS]);
  });

  it('when roles create names a permission outside the catalogue, then exit 2 naming it, the valid ones of its family and `keyward permissions`, before any request', async () => {
    const r = await cli(['roles', 'create', 'app', '--permission', 'crypto.encrypt,crypto.bogus'], {
      KEYWARD_CONFIG_DIR: join(dir, 'none'),
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('unknown permission: crypto.bogus');
    expect(r.stderr).toContain('crypto.generate-data-key');
    expect(r.stderr).toContain('keyward permissions');
  });

  it('when every command is loaded, then none takes a secret as an argument and each summary matches the list', async () => {
    const offenders: string[] = [];
    const walk = async (cmd: Command, path: string) => {
      const full = cmd.load ? await cmd.load() : cmd;
      if (cmd.load) expect([path, full.summary]).toEqual([path, cmd.summary]);
      for (const [name, o] of Object.entries(full.options ?? {}))
        if (o.type === 'string' && /secret|password|passphrase|token/i.test(name))
          offenders.push(`${path} --${name}`);
      for (const sub of full.subcommands ?? []) await walk(sub, `${path} ${sub.name}`);
    };
    for (const c of COMMANDS) await walk(c, c.name);
    expect(offenders).toEqual([]);
  });

  it('when encrypt --help is read, then it states the JSON form’s limit and the envelope beyond it', async () => {
    const r = await cli(['encrypt', '--help']);
    expect(r.stdout.toString()).toMatch(/Up to 32 KiB .*JSON_LIMIT_BYTES/s);
    expect(r.stdout.toString()).toContain('data-key envelope');
  });
});

describe('keyward encrypt and decrypt of files of any size', () => {
  let app: TestApp;
  let dir: string;
  let env: Record<string, string>;
  beforeAll(async () => {
    app = await startTestApp();
    const t = await makeTenant(app, [
      'crypto.encrypt',
      'crypto.decrypt',
      'crypto.generate-data-key',
    ]);
    await createKey(app.ctx, t.tenantId, { kid: 'files', type: 'aes-256' });
    dir = mkdtempSync(join(tmpdir(), 'keyward-files-'));
    env = { KEYWARD_CONFIG_DIR: join(dir, 'cfg'), KEYWARD_CLIENT_SECRET: t.clientSecret };
    const login = await cli(
      ['login', '--url', app.url, '--client-id', t.clientId, '--profile', 'billing'],
      env,
    );
    expect([login.code, login.stderr]).toEqual([0, '']);
  });
  afterAll(async () => {
    await app?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  for (const [label, size] of [
    ['a 1 KB file (the JSON form)', 1000],
    ['a 200 KB invoice (it answered 413 before)', 200_000],
    ['an exact multiple of the chunk (2 x 64 KiB)', 2 * 65536],
    ['a 3 MB file', 3_000_000],
  ] as const) {
    it(`when ${label} is encrypted with a context and decrypted back, then the bytes are the same`, async () => {
      const clear = randomBytes(size);
      const file = join(dir, `in-${size}`);
      writeFileSync(file, clear);
      const enc = await cli(
        [
          'encrypt',
          'files',
          '--profile',
          'billing',
          '--in',
          file,
          '--out',
          `${file}.enc`,
          '--context',
          'order=42',
        ],
        env,
      );
      expect([enc.code, enc.stderr]).toEqual([0, '']);
      const sealed = readFileSync(`${file}.enc`);
      // Up to 32 KiB a compact JWE (base64url of its JSON header), beyond it an envelope.
      expect(sealed.subarray(0, 18).toString()).toBe(
        size > 32 * 1024 ? 'keyward-envelope/1' : 'eyJ' + sealed.subarray(3, 18).toString(),
      );
      const dec = await cli(
        [
          'decrypt',
          '--profile',
          'billing',
          '--in',
          `${file}.enc`,
          '--out',
          `${file}.dec`,
          '--context',
          'order=42',
        ],
        env,
      );
      expect([dec.code, dec.stderr]).toEqual([0, '']);
      expect(readFileSync(`${file}.dec`).equals(clear)).toBe(true);
    }, 60_000);
  }

  it('when an envelope is read from stdin and written to stdout, then it round-trips too', async () => {
    const clear = randomBytes(100_000);
    const enc = await cli(['encrypt', 'files', '--profile', 'billing'], env, clear);
    expect(enc.code).toBe(0);
    const dec = await cli(['decrypt', '--profile', 'billing'], env, enc.stdout);
    expect([dec.code, dec.stderr]).toEqual([0, '']);
    expect(dec.stdout.equals(clear)).toBe(true);
  });

  it('when an envelope is altered, truncated or opened with another context, then decrypt fails and writes no output file', async () => {
    const clear = randomBytes(150_000);
    const file = join(dir, 'tamper');
    writeFileSync(file, clear);
    expect(
      (
        await cli(
          ['encrypt', 'files', '--profile', 'billing', '--in', file, '--out', `${file}.enc`],
          env,
        )
      ).code,
    ).toBe(0);
    const sealed = readFileSync(`${file}.enc`);
    const flipped = Buffer.from(sealed);
    flipped[flipped.length - 100] ^= 1;
    // The magic line, the header line, then chunks of 64 KiB + a 16-byte tag (the last shorter).
    const body = sealed.indexOf(10, sealed.indexOf(10) + 1) + 1;
    const truncated = sealed.subarray(0, sealed.length - 1);
    const dropLast = sealed.subarray(0, body + 2 * (65536 + 16));
    for (const [name, bytes, extra] of [
      ['flipped', flipped, []],
      ['truncated', truncated, []],
      ['last chunk dropped', dropLast, []],
      ['other context', sealed, ['--context', 'order=43']],
    ] as const) {
      writeFileSync(`${file}.bad`, bytes);
      const out = `${file}.${name.replaceAll(' ', '-')}.dec`;
      const r = await cli(
        ['decrypt', '--profile', 'billing', '--in', `${file}.bad`, '--out', out, ...extra],
        env,
      );
      expect([name, r.code]).toEqual([name, 1]);
      expect([name, existsSync(out)]).toEqual([name, false]);
    }
  }, 60_000);
});
