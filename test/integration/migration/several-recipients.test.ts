/**
 * Several recipients over HTTP: mail encrypted to the sender and a recipient
 * converts with whichever key the tenant holds; `targetKid` as a list answers one JWE recipient
 * per target (General JSON Serialization, opened here with jose's generalDecrypt by each target's
 * private key); a password recipient opens with `metadata.password`, and a wrong password answers
 * exactly what a damaged ciphertext does. Jobs refuse a password (they store their metadata).
 */
import { randomBytes } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { generalDecrypt } from 'jose';
import { parseSubmit } from '../../../api/services/jobs/submit.ts';
import {
  CONVERT,
  OpenSslDir,
  convert,
  postParts,
  postRaw,
  REENCRYPT,
  importKey,
  makeActor,
  makeKey,
  parseMultipart,
  startTestApp,
} from './helpers.ts';
import type { Actor, Answer, TestApp, TestKey } from './helpers.ts';
import { withBadPadding } from '../../support/damage.ts';
import { cms } from '../../../support/fixtures/cms.ts';

let app: TestApp;
let ssl: OpenSslDir;
let actor: Actor;
let keys: Record<'sender' | 'recipient' | 'archive' | 'stranger' | 'signer', TestKey>;
let data: Buffer;
let mail: Buffer;

beforeAll(async () => {
  app = await startTestApp();
  ssl = new OpenSslDir();
  keys = {
    sender: makeKey(ssl, 'mr-sender', 'rsa-2048'),
    recipient: makeKey(ssl, 'mr-recipient', 'ec-p256'),
    archive: makeKey(ssl, 'mr-archive', 'rsa-2048'),
    stranger: makeKey(ssl, 'mr-stranger', 'rsa-2048'),
    signer: makeKey(ssl, 'mr-signer', 'ec-p256'),
  };
  actor = await makeActor(app);
  // The sender's copy is not held: the tenant is the recipient's organisation.
  await importKey(app, actor, ssl, keys.recipient, 'encrypt');
  await importKey(app, actor, ssl, keys.archive);
  await importKey(app, actor, ssl, keys.signer, 'sign');
  data = randomBytes(120_000);
  ssl.write('data.bin', data);
  ssl.write('small.bin', randomBytes(10_000));
  mail = encrypt(['-aes-256-cbc', keys.sender.certFile, keys.recipient.certFile]);
});

afterAll(async () => {
  ssl.cleanup();
  await app.stop();
});

function encrypt(args: string[], input = 'data.bin'): Buffer {
  return cms.encrypt(ssl, input, { binary: true, outform: 'DER', extra: args });
}

/** Opens the multipart answer's JWE with jose's General JSON reader under `key`. */
async function open(a: Answer, key: KeyObject): Promise<Buffer> {
  const { parts, closed } = parseMultipart(a.body, a.headers.get('content-type')!);
  expect(closed).toBe(true);
  const header = JSON.parse(parts[0].body.toString());
  const body = parts[1].body;
  const { plaintext } = await generalDecrypt(
    {
      ...header,
      ciphertext: body.subarray(0, body.length - 16).toString('base64url'),
      tag: body.subarray(body.length - 16).toString('base64url'),
    },
    key,
  );
  return Buffer.from(plaintext);
}

const kids = (a: Answer) =>
  JSON.parse(
    parseMultipart(a.body, a.headers.get('content-type')!).parts[0].body.toString(),
  ).recipients.map((r: { header: { kid: string } }) => r.header.kid);

describe('several recipients', () => {
  it('when only the second recipient is held, then {} converts with it', async () => {
    const r = await convert(app, actor.user, mail, {});
    expect(r.status).toBe(200);
    expect(kids(r)).toEqual(['mr-recipient#1']);
    expect((await open(r, keys.recipient.privateKey)).equals(data)).toBe(true);
  });

  it('when both recipients are held and no targetKid is given, then the JWE is for both, in file order, and each key opens it', async () => {
    // Regression: the default target was the decrypting recipient only, so the second mailbox
    // lost its copy.
    const both = encrypt(['-aes-256-cbc', keys.archive.certFile, keys.recipient.certFile]);
    const r = await convert(app, actor.user, both, {});
    expect(r.status).toBe(200);
    expect(kids(r)).toEqual(['mr-archive#1', 'mr-recipient#1']);
    expect((await open(r, keys.archive.privateKey)).equals(data)).toBe(true);
    expect((await open(r, keys.recipient.privateKey)).equals(data)).toBe(true);
    // recipientKid picks the key that decrypts; the targets stay every held recipient.
    const picked = await convert(app, actor.user, both, { recipientKid: 'mr-recipient' });
    expect(kids(picked)).toEqual(['mr-archive#1', 'mr-recipient#1']);
  });

  it('when a held recipient key is for signing only, then it is no target of the default', async () => {
    const mixed = encrypt(['-aes-256-cbc', keys.signer.certFile, keys.recipient.certFile]);
    const r = await convert(app, actor.user, mixed, {});
    expect(r.status).toBe(200);
    expect(kids(r)).toEqual(['mr-recipient#1']);
  });

  it('when targetKid lists two keys, then each opens the General JSON JWE', async () => {
    const r = await convert(app, actor.user, mail, { targetKid: ['mr-archive', 'mr-recipient'] });
    expect(r.status).toBe(200);
    expect(kids(r)).toEqual(['mr-archive#1', 'mr-recipient#1']);
    expect((await open(r, keys.archive.privateKey)).equals(data)).toBe(true);
    expect((await open(r, keys.recipient.privateKey)).equals(data)).toBe(true);
  });

  it('when a result for two targets is re-encrypted, then the first held recipient opens it', async () => {
    const r = await convert(app, actor.user, mail, { targetKid: ['mr-archive', 'mr-recipient'] });
    // The first recipient names a key of another tenant: re-encrypt uses the next one.
    const type = r.headers.get('content-type')!;
    const { parts } = parseMultipart(r.body, type);
    const head = JSON.parse(parts[0].body.toString());
    head.recipients[0].header.kid = 'elsewhere#1';
    const boundary = /boundary="([^"]+)"/.exec(type)![1];
    const body = Buffer.concat([
      Buffer.from(`--${boundary}\r\nContent-Type: application/jose+json\r\n\r\n`),
      Buffer.from(JSON.stringify(head)),
      Buffer.from(`\r\n--${boundary}\r\nContent-Type: application/octet-stream\r\n\r\n`),
      parts[1].body,
      Buffer.from(`\r\n--${boundary}--\r\n`),
    ]);
    const re = await postRaw(app, `${REENCRYPT}?kid=mr-archive`, actor.workload, body, type);
    expect(re.status).toBe(200);
    expect(kids(re)).toEqual(['mr-archive#1']);
    expect((await open(re, keys.archive.privateKey)).equals(data)).toBe(true);
  });

  it('when JSON is asked for with two targets, then it is the General JSON serialization', async () => {
    const r = await postParts(
      app,
      CONVERT,
      actor.user,
      [
        ['metadata', JSON.stringify({ targetKid: ['mr-archive', 'mr-recipient'] })],
        ['file', { data: mail, type: 'application/pkcs7-mime', filename: 'mail.p7m' }],
      ],
      { accept: 'application/jose+json' },
    );
    expect(r.status).toBe(200);
    const jwe = r.json<Parameters<typeof generalDecrypt>[0]>();
    expect(jwe.recipients).toHaveLength(2);
    for (const k of [keys.archive, keys.recipient])
      expect(Buffer.from((await generalDecrypt(jwe, k.privateKey)).plaintext).equals(data)).toBe(
        true,
      );
  });

  it.each<[string, number, string, unknown]>([
    ['duplicates', 400, 'cms-bad-metadata', ['mr-archive', 'mr-archive']],
    ['an unknown kid', 404, 'cms-key-not-imported', ['mr-archive', 'mr-nobody']],
    ['a signing key', 422, 'key-usage-mismatch', ['mr-archive', 'mr-signer']],
  ])('when targetKid has %s, then %i %s', async (_, status, slug, targetKid) => {
    const r = await convert(app, actor.user, mail, { targetKid });
    expect(r.status).toBe(status);
    expect(r.json().type).toMatch(new RegExp(`/problems/${slug}$`));
  });

  it('when no recipient is held, then cms-key-not-imported', async () => {
    const r = await convert(
      app,
      actor.user,
      encrypt([keys.sender.certFile, keys.stranger.certFile]),
      {},
    );
    expect(r.status).toBe(404);
    expect(r.json().type).toMatch(/\/problems\/cms-key-not-imported$/);
  });
});

describe('password recipients', () => {
  const pwri = (password: string, input = 'data.bin') =>
    encrypt(['-aes-256-cbc', '-pwri_password', password, keys.stranger.certFile], input);

  it('when metadata.password is right, then the target opens the result', async () => {
    const r = await convert(app, actor.user, pwri('archive 2019'), {
      password: 'archive 2019',
      targetKid: 'mr-archive',
    });
    expect(r.status).toBe(200);
    expect((await open(r, keys.archive.privateKey)).equals(data)).toBe(true);
  });

  it('when the password is wrong, then the answer is the one a damaged ciphertext gets', async () => {
    // Small enough to be checked before the answer starts (a larger one is cut at the same point
    // either way, where the network's chunking puts the start of the answer).
    const file = pwri('archive 2019', 'small.bin');
    const wrong = await convert(app, actor.user, file, {
      password: 'archive 2020',
      targetKid: 'mr-archive',
    });
    const damaged = withBadPadding(file);
    const bad = await convert(app, actor.user, damaged, {
      password: 'archive 2019',
      targetKid: 'mr-archive',
    });
    const view = (a: Answer) => ({
      status: a.status,
      cut: a.cut,
      body: a.headers.get('content-type')?.startsWith('multipart/')
        ? a.body.length
        : a.body.toString(),
    });
    expect(view(wrong)).toEqual(view(bad));
    expect(wrong.body.toString()).not.toContain('archive 20');
  });

  it('when a job is given a password, then it is refused before anything is stored', () => {
    expect(() =>
      parseSubmit({
        source: { key: 'in/a.p7m' },
        metadata: { password: 'p', targetKid: 'mr-archive' },
        output: { prefix: 'out/' },
      }),
    ).toThrow(expect.objectContaining({ code: 'validation_failed' }));
  });
});
