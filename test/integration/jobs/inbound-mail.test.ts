/**
 * The inbound-mail archive, end to end: a folder of S/MIME messages signed by outside
 * senders (whose private keys nobody here holds) and encrypted to two recipients (the company's
 * mailbox and the sender's own copy), migrated with `keyward migrate` through two worker
 * processes. Each message is made by the openssl CLI (`cms -sign | cms -encrypt`); every result
 * is opened with jose by the mailbox's private key, its JWS verified with jose by the archive
 * signing key over the signed MIME entity, and every original signer's certificate is recorded.
 */
import { createPublicKey, X509Certificate } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { flattenedDecrypt, flattenedVerify } from 'jose';
import {
  OpenSslDir,
  makeKey,
  parseMultipart,
  type TestKey,
} from '../../../support/fixtures/pkcs7.ts';
import { api, makeTenant, userToken } from '../../../support/auth.ts';
import { importKeystore } from '../../../api/services/keys/import.ts';
import {
  runKeywardCli,
  spawnWorker,
  startJobsEnv,
  type JobsEnv,
  type WorkerChild,
} from './harness.ts';
import { cms } from '../../../support/fixtures/cms.ts';
import { JOB_PERMISSIONS } from '../../../support/job-permissions.ts';

const crlf = (b: Buffer) => Buffer.from(b.toString('latin1').replace(/\r?\n/g, '\r\n'), 'latin1');

let env: JobsEnv;
let ssl: OpenSslDir;
let mailbox: TestKey;
let archive: TestKey;
let senders: TestKey[];
let workers: WorkerChild[] = [];
let dir: string;
let cliEnv: Record<string, string>;
/** Per message: its sender and the clear-signed entity the sender signed. */
const messages = new Map<string, { sender: TestKey; signed: Buffer; text: Buffer }>();

const runCli = (args: string[]) => runKeywardCli(args, cliEnv);

beforeAll(async () => {
  ssl = new OpenSslDir();
  mailbox = makeKey(ssl, 'inbox-mailbox', 'rsa-2048');
  archive = makeKey(ssl, 'inbox-archive', 'ec-p256');
  senders = [makeKey(ssl, 'sender-a', 'rsa-2048'), makeKey(ssl, 'sender-b', 'ec-p256')];
  env = await startJobsEnv();
  const t = await makeTenant(env.app, [...JOB_PERMISSIONS, 'admin.keys.update']);
  // The tenant holds the mailbox's key and an archive signing key; the senders' keys are nowhere.
  for (const [k, usage] of [
    [mailbox, 'encrypt'],
    [archive, 'sign'],
  ] as const)
    await importKeystore(env.app.ctx, t.tenantId, {
      data: Buffer.concat([ssl.read(k.keyFile), ssl.read(k.certFile)]),
      kid: k.kid,
      usage,
    });
  const admin = await userToken(env.app, t);
  const patched = await api(
    env.app,
    'PATCH',
    `/api/v3/admin/tenants/${t.tenantId}/keys/${archive.kid}`,
    admin,
    { archiveSigning: true },
  );
  expect(patched.status).toBe(200);
  workers = await Promise.all([spawnWorker(env.workerEnv()), spawnWorker(env.workerEnv())]);
  cliEnv = {
    KEYWARD_URL: env.app.url,
    KEYWARD_CLIENT_ID: t.clientId,
    KEYWARD_CLIENT_SECRET: t.clientSecret,
  };

  dir = mkdtempSync(join(tmpdir(), 'keyward-inbox-'));
  mkdirSync(join(dir, 'inbox'), { recursive: true });
  for (let i = 0; i < 6; i++) {
    const sender = senders[i % 2];
    const name = `msg-${i}.eml`;
    const text = Buffer.from(
      `From: ${sender.kid}@partner.example\nSubject: order ${i}\n\n` +
        Array.from({ length: 200 + i * 50 }, (_, n) => `line ${n} of message ${i}`).join('\n') +
        '\n',
    );
    ssl.write(`${name}.txt`, text);
    // As a mail client sends it: signed by the sender, then encrypted to the recipient and to
    // the sender's own copy.
    const signed = cms.sign(ssl, `${name}.txt`, { by: sender });
    ssl.write(`${name}.signed`, signed);
    const encrypted = cms.encrypt(ssl, `${name}.signed`, {
      to: [mailbox, sender],
      cipher: 'aes256',
    });
    writeFileSync(join(dir, 'inbox', name), encrypted);
    messages.set(name, { sender, signed, text });
  }
}, 120_000);

afterAll(async () => {
  await Promise.all(workers.map((w) => w.stop()));
  await env?.close();
  ssl?.cleanup();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** The parts of a result as a job stored it: a multipart/mixed whose first line is its delimiter. */
function partsOf(file: Buffer) {
  const boundary = file.subarray(2, file.indexOf('\r\n')).toString();
  const { parts, closed } = parseMultipart(file, `multipart/mixed; boundary="${boundary}"`);
  expect(closed).toBe(true);
  return parts;
}

describe('an inbound-mail archive signed by outside senders and encrypted to two recipients', () => {
  it('when it is migrated with keyward migrate and two workers, then every result opens with the mailbox key, its JWS verifies with the archive key and records the original signer', async () => {
    const out = join(dir, 'out');
    const r = await runCli([
      'migrate',
      join(dir, 'inbox'),
      '--out',
      out,
      '--poll',
      '100',
      '-c',
      '4',
    ]);
    expect(r.stderr).not.toMatch(/failed:/);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('6 files: 6 converted, 0 failed, 0 skipped');
    const results = readdirSync(out);
    for (const [name, m] of messages) {
      const file = results.find((f) => f.startsWith(`${name}.`) && !f.endsWith('.content'));
      expect(file).toBeDefined();
      const parts = partsOf(readFileSync(join(out, file!)));
      const jwe = JSON.parse(parts[0].body.toString());
      const ct = parts[1].body;
      const { plaintext } = await flattenedDecrypt(
        {
          protected: jwe.protected,
          header: jwe.recipients[0].header,
          encrypted_key: jwe.recipients[0].encrypted_key,
          iv: jwe.iv,
          ciphertext: ct.subarray(0, ct.length - 16).toString('base64url'),
          tag: ct.subarray(ct.length - 16).toString('base64url'),
        },
        mailbox.privateKey,
      );
      // Nothing lost: the JWE holds the clear-signed message the sender sent.
      expect(Buffer.from(plaintext).equals(crlf(m.signed))).toBe(true);
      // The JWS (third part) is the archive key's, over the signed entity (the text, canonical).
      const jws = JSON.parse(parts[2].body.toString());
      const payload = crlf(m.text);
      const archiveKey = createPublicKey(archive.privateKey);
      // One signing key (the archive key) gives one signature, flattened or in General JSON.
      const signature = jws.signatures ? jws.signatures[0] : jws;
      expect(jws.signatures?.length ?? 1).toBe(1);
      const verified = await flattenedVerify({ ...signature, payload }, archiveKey);
      const header = verified.protectedHeader as Record<string, any>;
      expect(header.kid).toBe(`${archive.kid}#1`);
      // The original signer: its certificate, as the sender's mail carried it.
      const [original] = header.kw_signers;
      expect(original.verified).toBe('signature');
      expect(original.x5c[0]).toBe(
        new X509Certificate(ssl.read(m.sender.certFile)).raw.toString('base64'),
      );
    }
  }, 120_000);
});
