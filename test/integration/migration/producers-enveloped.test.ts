/**
 * Other producers' armour: GnuPG's gpgsm writes `--armor` output as
 * `-----BEGIN ENCRYPTED MESSAGE-----` and `-----BEGIN SIGNED MESSAGE-----`. The files are made by
 * the real gpgsm in a throwaway GNUPGHOME holding a key imported from PKCS#12, converted over
 * HTTP with that key imported into the tenant, and every output is checked with jose against the
 * bytes gpgsm encrypted or signed. An armour whose END line names another label is its own problem.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import {
  OpenSslDir,
  convert,
  importKey,
  makeActor,
  makeKey,
  openJwe,
  postParts,
  publicOf,
  startTestApp,
  verifyDetached,
} from './helpers.ts';
import type { Actor, Jws, TestApp, TestKey } from './helpers.ts';

let app: TestApp;
let ssl: OpenSslDir;
let actor: Actor;
let key: TestKey;
let signKey: TestKey;
let data: Buffer;
let home: string;

/** Runs gpgsm in the throwaway home; `input` goes to stdin (the passphrase when it asks). */
function gpgsm(args: string[], input = ''): Buffer {
  return execFileSync(
    'gpgsm',
    ['--batch', '--disable-crl-checks', '--disable-policy-checks', ...args],
    {
      env: { ...process.env, GNUPGHOME: home },
      input,
      stdio: ['pipe', 'pipe', 'pipe'],
    },
  );
}

beforeAll(async () => {
  app = await startTestApp();
  ssl = new OpenSslDir();
  key = makeKey(ssl, 'gpgsm-rsa', 'rsa-2048');
  // The same key and certificate imported once per usage: it decrypts and it re-signs.
  signKey = { ...key, kid: 'gpgsm-rsa-sign' };
  actor = await makeActor(app);
  await importKey(app, actor, ssl, key, 'encrypt');
  await importKey(app, actor, ssl, signKey, 'sign');
  data = randomBytes(20_000);
  ssl.write('data.bin', data);

  home = join(ssl.dir, 'gnupg');
  mkdirSync(home, { mode: 0o700 });
  writeFileSync(join(home, 'gpg-agent.conf'), 'allow-loopback-pinentry\n');
  // gpgsm 2.2 reads PKCS#12 with 3DES-protected keys and plain certificates.
  ssl.run([
    'pkcs12',
    '-export',
    '-inkey',
    key.keyFile,
    '-in',
    key.certFile,
    '-out',
    'key.p12',
    '-passout',
    'pass:pw',
    '-keypbe',
    'PBE-SHA1-3DES',
    '-certpbe',
    'NONE',
    '-macalg',
    'sha1',
  ]);
  gpgsm(
    ['--pinentry-mode', 'loopback', '--passphrase-fd', '0', '--import', ssl.path('key.p12')],
    'pw\n',
  );
  const fpr = ssl
    .run(['x509', '-in', key.certFile, '-noout', '-fingerprint', '-sha1'])
    .toString()
    .split('=')[1]
    .trim();
  // A self-signed certificate is used only once it is trusted.
  writeFileSync(join(home, 'trustlist.txt'), `${fpr} S relax\n`);
});

afterAll(async () => {
  try {
    execFileSync('gpgconf', ['--kill', 'gpg-agent'], { env: { ...process.env, GNUPGHOME: home } });
  } catch {
    // no agent was started
  }
  ssl.cleanup();
  await app.stop();
});

const keyId = () =>
  `0x${ssl
    .run(['x509', '-in', key.certFile, '-noout', '-fingerprint', '-sha1'])
    .toString()
    .replace(/[^0-9A-F]/g, '')
    .slice(-8)}`;

describe('gpgsm --armor', () => {
  it('when gpgsm encrypted it (ENCRYPTED MESSAGE), then the JWE opens to the same bytes', async () => {
    const file = gpgsm(['--armor', '-r', keyId(), '--encrypt', ssl.path('data.bin')]);
    expect(file.toString('latin1', 0, 33)).toBe('-----BEGIN ENCRYPTED MESSAGE-----');
    const r = await convert(app, actor.user, file, {});
    expect(r.status).toBe(200);
    expect((await openJwe(r, key.privateKey)).plaintext.equals(data)).toBe(true);
  });

  it('when gpgsm signed it (SIGNED MESSAGE), then the JWS verifies over the same bytes', async () => {
    const file = gpgsm(
      [
        '--pinentry-mode',
        'loopback',
        '--passphrase-fd',
        '0',
        '--armor',
        '-u',
        keyId(),
        '--sign',
        ssl.path('data.bin'),
      ],
      'pw\n',
    );
    expect(file.toString('latin1', 0, 30)).toBe('-----BEGIN SIGNED MESSAGE-----');
    const r = await convert(app, actor.user, file, {});
    expect(r.status).toBe(200);
    await verifyDetached(r.json<Jws>(), data, publicOf(key));
  });

  it('when the END line names another label, then 400 cms-pem-end-mismatch', async () => {
    const file = gpgsm(['--armor', '-r', keyId(), '--encrypt', ssl.path('data.bin')])
      .toString('latin1')
      .replace('-----END ENCRYPTED MESSAGE-----', '-----END SIGNED MESSAGE-----');
    const r = await convert(app, actor.user, Buffer.from(file, 'latin1'), {});
    expect(r.status).toBe(400);
    expect(r.json()).toMatchObject({
      type: expect.stringMatching(/\/problems\/cms-pem-end-mismatch$/),
      detail: expect.stringContaining('SIGNED MESSAGE'),
    });
  });

  it('when analyzed, then the form is pem', async () => {
    const file = gpgsm(['--armor', '-r', keyId(), '--encrypt', ssl.path('data.bin')]);
    const r = await postParts(app, '/api/v3/migration/stream/analyze-pkcs7', actor.user, [
      ['file', { data: file, filename: 'msg.asc' }],
    ]);
    expect(r.json()).toMatchObject({
      container: 'pem',
      contentType: 'envelopedData',
      convertible: true,
    });
  });
});
