/**
 * The conversion metadata as an attacker sends it: a PWRI `password` is never
 * logged (at LOG_LEVEL debug), stored or echoed, whatever else fails; its PBKDF2 iteration count
 * is capped before any derivation (support/fixtures/pwri.ts writes the files: OpenSSL's CLI always
 * uses 2,048); `targetKid`, `recipientKid` and `signerKid` naming another tenant's key answer exactly
 * as an unknown kid does; hostile shapes of `targetKid` and `verify` are cms-bad-metadata.
 */
import { randomBytes } from 'node:crypto';
import { pwriEnvelope } from '../../../support/fixtures/pwri.ts';
import { MAX_ITERATIONS } from '../../../shared/pkcs7/password-recipient.ts';
import {
  CONVERT,
  OpenSslDir,
  convert,
  importKey,
  makeActor,
  makeKey,
  openJwe,
  postParts,
  startTestApp,
} from './helpers.ts';
import type { Actor, Answer, TestApp, TestKey } from './helpers.ts';
import { cms } from '../../../support/fixtures/cms.ts';

/** The engine's cap. */
const CAP = MAX_ITERATIONS;
const PASSWORDS = ['correct horse 7f3a', 'wrong battery 9c1e', 'no pwri here 42d0'];

let app: TestApp;
let ssl: OpenSslDir;
let actor: Actor;
let other: Actor;
let archive: TestKey;
let data: Buffer;
const answers: Answer[] = [];

/** A conversion whose answer is kept, so none may echo a password. */
async function converted(file: Buffer, metadata: Record<string, unknown>): Promise<Answer> {
  const r = await convert(app, actor.user, file, metadata);
  answers.push(r);
  return r;
}

beforeAll(async () => {
  app = await startTestApp({ LOG_LEVEL: 'debug' });
  ssl = new OpenSslDir();
  actor = await makeActor(app);
  other = await makeActor(app);
  archive = makeKey(ssl, 'hm-archive', 'rsa-2048');
  await importKey(app, actor, ssl, archive, 'encrypt');
  await importKey(app, actor, ssl, { ...archive, kid: 'hm-signer' }, 'sign');
  // Another tenant's keys, under kids this tenant does not have.
  const elsewhere = makeKey(ssl, 'hm-elsewhere', 'rsa-2048');
  await importKey(app, other, ssl, elsewhere, 'encrypt');
  await importKey(app, other, ssl, { ...elsewhere, kid: 'hm-elsewhere-signer' }, 'sign');
  data = randomBytes(2000);
  ssl.write('data.bin', data);
  for (const n of [CAP, CAP + 1]) ssl.write(`pwri-${n}.der`, pwriEnvelope(data, PASSWORDS[0], n));
}, 120_000);

afterAll(async () => {
  ssl.cleanup();
  await app.stop();
});

const encrypted = () =>
  cms.encrypt(ssl, 'data.bin', {
    to: archive,
    cipher: 'aes-256-cbc',
    binary: true,
    outform: 'DER',
  });
const signed = () =>
  cms.sign(ssl, 'data.bin', { by: archive, detached: false, binary: true, outform: 'DER' });

describe('PBKDF2 iterations of a password recipient', () => {
  it(`when a file has ${CAP} iterations, then it converts; with one more, cms-unsupported before any derivation`, async () => {
    const ok = await converted(ssl.read(`pwri-${CAP}.der`), {
      password: PASSWORDS[0],
      targetKid: 'hm-archive',
    });
    expect(ok.status).toBe(200);
    expect((await openJwe(ok, archive.privateKey)).plaintext.equals(data)).toBe(true);
    const over = await converted(ssl.read(`pwri-${CAP + 1}.der`), {
      password: PASSWORDS[0],
      targetKid: 'hm-archive',
    });
    expect(over.status).toBe(415);
    expect(over.json()).toMatchObject({
      detail: `a PBKDF2 iteration count of ${CAP + 1} is not supported`,
    });
    expect(over.json().type).toMatch(/\/problems\/cms-unsupported$/);
  });
});

describe('another tenant’s kid', () => {
  /** The answer with the kid it names replaced, to compare two kids' answers. */
  const view = (a: Answer, kid: string) => ({
    status: a.status,
    body: a.body
      .toString()
      .replaceAll(kid, '<kid>')
      .replace(/"instance":"[^"]*"/, ''),
  });

  it.each<[string, () => Buffer, string, (kid: string) => Record<string, unknown>]>([
    ['targetKid', encrypted, 'hm-elsewhere', (kid) => ({ targetKid: kid })],
    [
      'targetKid in a list',
      encrypted,
      'hm-elsewhere',
      (kid) => ({ targetKid: ['hm-archive', kid] }),
    ],
    ['recipientKid', encrypted, 'hm-elsewhere', (kid) => ({ recipientKid: kid })],
    ['signerKid', signed, 'hm-elsewhere-signer', (kid) => ({ signerKid: kid })],
  ])(
    'when %s names it, then the answer is the one an unknown kid gets',
    async (_, file, kid, metadata) => {
      const theirs = await converted(file(), metadata(kid));
      const unknown = await converted(file(), metadata('hm-nowhere'));
      expect(theirs.status).toBeGreaterThanOrEqual(400);
      expect(view(theirs, kid)).toEqual(view(unknown, 'hm-nowhere'));
    },
  );
});

describe('hostile metadata shapes', () => {
  it.each<[string, Record<string, unknown>]>([
    ['targetKid a number', { targetKid: 7 }],
    ['targetKid an object', { targetKid: { 0: 'hm-archive' } }],
    ['targetKid null', { targetKid: null }],
    ['targetKid a nested list', { targetKid: [['hm-archive']] }],
    ['targetKid an empty kid', { targetKid: ['hm-archive', ''] }],
    ['targetKid a kid twice', { targetKid: ['hm-archive', 'hm-archive'] }],
    ['targetKid 17 kids', { targetKid: Array.from({ length: 17 }, (_, i) => `k${i}`) }],
    ['targetKid a kid of 300 characters', { targetKid: 'k'.repeat(300) }],
    ['verify in capitals', { verify: 'CHAIN' }],
    ['verify a list', { verify: ['chain'] }],
    ['password a number', { password: 1234, targetKid: 'hm-archive' }],
  ])('when %s, then 400 cms-bad-metadata before anything is decrypted', async (_, metadata) => {
    const r = await converted(encrypted(), metadata);
    expect(r.status).toBe(400);
    expect(r.json().type).toMatch(/\/problems\/cms-bad-metadata$/);
  });
});

describe('the password', () => {
  it('when it is right, wrong, for a file without a password recipient or inside broken JSON, then no answer, log line or table holds it', async () => {
    const pwri = cms.encrypt(ssl, 'data.bin', {
      password: PASSWORDS[0],
      cipher: 'aes-256-cbc',
      binary: true,
      outform: 'DER',
    });
    expect(
      (await converted(pwri, { password: PASSWORDS[0], targetKid: 'hm-archive' })).status,
    ).toBe(200);
    expect(
      (await converted(pwri, { password: PASSWORDS[1], targetKid: 'hm-archive' })).status,
    ).toBe(400);
    expect(
      (await converted(encrypted(), { password: PASSWORDS[2], targetKid: 'hm-archive' })).status,
    ).toBe(400);
    const broken = await postParts(app, CONVERT, actor.user, [
      ['metadata', `{"password":"${PASSWORDS[2]}",}`],
      ['file', { data: pwri, type: 'application/pkcs7-mime' }],
    ]);
    answers.push(broken);
    expect(broken.status).toBe(400);

    const tables = (await app.ctx
      .db('information_schema.tables')
      .where({ table_schema: 'public' })
      .pluck('table_name')) as string[];
    expect(tables.length).toBeGreaterThan(5);
    const stored: string[] = [];
    for (const t of tables) stored.push(JSON.stringify(await app.ctx.db(t).select()));
    const log = app.logText();
    expect(log.length).toBeGreaterThan(0);
    for (const p of PASSWORDS) {
      expect(log).not.toContain(p);
      for (const a of answers) expect(a.body.toString('latin1')).not.toContain(p);
      for (const s of stored) expect(s).not.toContain(p);
    }
  });
});
