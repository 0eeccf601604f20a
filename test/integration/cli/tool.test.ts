/**
 * The CLI as a tool: packed and installed outside the checkout, `keyward --version`
 * fast and silent on stderr, `keyward permissions` a line each, an unknown permission named with
 * its near ones, no secret among any command's options, and encrypt/decrypt of files of any size
 * (before, a 200 KB file answered 413: the JSON limit, unsaid in --help).
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { createCipheriv, randomBytes } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestApp, type TestApp } from '../../../support/app.ts';
import { makeTenant } from '../../../support/auth.ts';
import { PERMISSIONS } from '../../../shared/permissions.ts';
import { COMMANDS } from '../../../bin/lib/commands/index.ts';
import type { Command } from '../../../bin/lib/command.ts';
import { changeKey, createKey } from '../../../api/services/keys/store.ts';

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

  it('when `npx keyward` is run from the checkout on the system Node, then npm prints no engine warning (before: the same EBADENGINE block twice)', () => {
    // npm itself on the system Node, as a user's shell runs it (without the project's .bin),
    // with a cache of its own: the warnings came with a fresh one.
    const PATH = (process.env.PATH ?? '')
      .split(':')
      .filter((p) => !p.includes('node_modules'))
      .join(':');
    const r = spawnSync('npx', ['keyward', '--version'], {
      cwd: root,
      encoding: 'utf8',
      // Nothing of the npm that runs this test (`npm test -s` sets loglevel silent for it).
      env: {
        ...Object.fromEntries(
          Object.entries(process.env).filter(([k]) => !k.toLowerCase().startsWith('npm_')),
        ),
        PATH,
        npm_config_cache: join(dir, 'npm-cache'),
      },
    });
    expect([r.status, r.stdout]).toEqual([
      0,
      `${JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version}\n`,
    ]);
    expect(r.stderr).not.toContain('EBADENGINE');
  }, 60_000);

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
  let tenantId: string;
  beforeAll(async () => {
    app = await startTestApp();
    const t = await makeTenant(app, [
      'crypto.encrypt',
      'crypto.decrypt',
      'crypto.generate-data-key',
    ]);
    tenantId = t.tenantId;
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
        size > 32 * 1024 ? 'keyward-envelope/2' : 'eyJ' + sealed.subarray(3, 18).toString(),
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
    // The magic, key and body lines, then chunks of 64 KiB + a 16-byte tag (the last shorter).
    const body = chunksStart(sealed);
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

  it('when a 200 KB envelope is re-encrypted after a rotation, then only its key line changes (version 2), the chunks are copied, and it decrypts back; before, 413 payload-too-large', async () => {
    const clear = randomBytes(200_000);
    const file = join(dir, 'invoice.pdf');
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
        join(dir, 'invoice.jwe'),
      ].concat(['--context', 'order=42']),
      env,
    );
    expect([enc.code, enc.stderr]).toEqual([0, '']);
    await changeKey(app.ctx, tenantId, 'files', 'rotate', 'test');
    const re = await cli(
      ['re-encrypt', '--profile', 'billing', '--in', join(dir, 'invoice.jwe')].concat([
        '--out',
        join(dir, 'invoice-v2.jwe'),
        '--context',
        'order=42',
      ]),
      env,
    );
    expect([re.code, re.stderr]).toEqual([0, '']);
    const before = readFileSync(join(dir, 'invoice.jwe'));
    const after = readFileSync(join(dir, 'invoice-v2.jwe'));
    const keyOf = (b: Buffer) => JSON.parse(b.toString().split('\n')[1]) as { version: number };
    expect([keyOf(before).version, keyOf(after).version]).toEqual([1, 2]);
    expect(after.subarray(chunksStart(after)).equals(before.subarray(chunksStart(before)))).toBe(
      true,
    );
    const dec = await cli(
      ['decrypt', '--profile', 'billing', '--in', join(dir, 'invoice-v2.jwe')].concat([
        '--context',
        'order=42',
      ]),
      env,
    );
    expect([dec.code, dec.stderr]).toEqual([0, '']);
    expect(dec.stdout.equals(clear)).toBe(true);
  }, 60_000);

  it('when an envelope of the first format is re-encrypted, then it is sealed again in format 2 and decrypts back', async () => {
    const clear = randomBytes(150_000);
    const dk = await cli(['data-key', 'files', '--profile', 'billing', '--output', 'json'], env);
    expect(dk.code).toBe(0);
    const { plaintext, ciphertext, kid, version } = JSON.parse(dk.stdout.toString());
    writeFileSync(
      join(dir, 'v1.env'),
      sealFormat1(clear, Buffer.from(plaintext, 'base64'), {
        kid,
        version,
        wrappedKey: ciphertext,
      }),
    );
    // The first format still decrypts as it is.
    const old = await cli(['decrypt', '--profile', 'billing', '--in', join(dir, 'v1.env')], env);
    expect([old.code, old.stderr, old.stdout.equals(clear)]).toEqual([0, '', true]);
    const re = await cli(
      [
        're-encrypt',
        '--profile',
        'billing',
        '--in',
        join(dir, 'v1.env'),
        '--out',
        join(dir, 'v2.env'),
      ],
      env,
    );
    expect([re.code, re.stderr]).toEqual([0, '']);
    expect(readFileSync(join(dir, 'v2.env')).subarray(0, 19).toString()).toBe(
      'keyward-envelope/2\n',
    );
    const dec = await cli(['decrypt', '--profile', 'billing', '--in', join(dir, 'v2.env')], env);
    expect([dec.code, dec.stderr, dec.stdout.equals(clear)]).toEqual([0, '', true]);
  }, 60_000);

  it('when a re-encryption is refused, then no output file is left, under its name or a temporary one', async () => {
    const file = join(dir, 'refused');
    writeFileSync(file, randomBytes(100_000));
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
        'a=1',
      ],
      env,
    );
    expect(enc.code).toBe(0);
    const sub = join(dir, 'refused-out');
    mkdirSync(sub);
    for (const input of [`${file}.enc`, `${file}`]) {
      const r = await cli(
        [
          're-encrypt',
          '--profile',
          'billing',
          '--in',
          input,
          '--out',
          join(sub, 'x.jwe'),
          '--context',
          'a=2',
        ],
        env,
      );
      expect(r.code).toBe(1);
      expect(readdirSync(sub)).toEqual([]);
    }
  }, 60_000);
});

/** Where an envelope's chunks start: after the magic, key and body lines. */
function chunksStart(envelope: Buffer): number {
  let at = 0;
  for (let line = 0; line < 3; line++) at = envelope.indexOf(10, at) + 1;
  return at;
}

/** An envelope as `keyward encrypt` wrote it before format 2: one header line, every chunk bound to it. */
function sealFormat1(
  clear: Buffer,
  key: Buffer,
  k: { kid: string; version: number; wrappedKey: string },
): Buffer {
  const prefix = randomBytes(7);
  const line = Buffer.from(
    `${JSON.stringify({ ...k, enc: 'A256GCM', chunk: 65536, noncePrefix: prefix.toString('base64url') })}\n`,
  );
  const parts = [Buffer.from('keyward-envelope/1\n'), line];
  const count = Math.max(1, Math.ceil(clear.length / 65536));
  for (let i = 0; i < count; i++) {
    const nonce = Buffer.alloc(12);
    prefix.copy(nonce);
    nonce.writeUInt32BE(i, 7);
    nonce[11] = i === count - 1 ? 1 : 0;
    const cipher = createCipheriv('aes-256-gcm', key, nonce);
    cipher.setAAD(line);
    parts.push(
      cipher.update(clear.subarray(i * 65536, (i + 1) * 65536)),
      cipher.final(),
      cipher.getAuthTag(),
    );
  }
  return Buffer.concat(parts);
}
