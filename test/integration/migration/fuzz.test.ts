/**
 * Mutation fuzzing of the streaming endpoints over HTTP: real openssl-made CMS files (signed and
 * enveloped, DER and BER, and the archive forms of contract 9: S/MIME as openssl writes it,
 * PEM, bare base64, clear-signed multipart/signed with and without -text, a .p7m inside a mail,
 * quoted-printable, CRLF and LF line ends) are bit-flipped, truncated, spliced and given edited length bytes for a
 * bounded time (FUZZ_SECONDS, default 20; FUZZ_SEED to replay a run), and each mutant is sent to
 * analyze and convert. Every answer must be a problem (4xx, problem+json), a 200, or a 200 cut
 * off mid-body; never a 5xx, a dropped connection without an answer, or a hang.
 */
import { randomBytes } from 'node:crypto';
import {
  ANALYZE,
  CONVERT,
  OpenSslDir,
  formBody,
  importKey,
  makeActor,
  makeKey,
  postWithDeadline,
  startTestApp,
} from './helpers.ts';
import type { Actor, TestApp } from './helpers.ts';
import { prng } from '../../support/prng.ts';
import { mutateBytes, type Mutant } from '../../support/mutate.ts';

const SECONDS = Number(process.env.FUZZ_SECONDS ?? 20);
const SEED = Number(process.env.FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));
const DEADLINE_MS = 15_000;
const CONCURRENCY = 4;

const rand = prng(SEED);

/** A BER length byte: the byte after a plausible tag, set to a long-form or indefinite marker or a random value. */
function lengthByte(b: Buffer, int: (n: number) => number): Mutant {
  const candidates: number[] = [];
  for (let i = 0; i < Math.min(b.length - 1, 4096); i++)
    if ([0x30, 0x31, 0x04, 0x06, 0x02, 0xa0, 0xa1, 0x24].includes(b[i])) candidates.push(i + 1);
  const at = candidates.length ? candidates[int(candidates.length)] : int(b.length);
  const v = [0x80, 0x81, 0x84, 0x88, 0x89, 0xff, 0x00, int(256)][int(8)];
  b[at] = v;
  if (v >= 0x81 && v <= 0x88 && at + 1 < b.length) b[at + 1] = [0x00, 0x7f, 0xff][int(3)];
  return { data: b, how: `length byte at ${at} set to 0x${v.toString(16)}` };
}

/** One mutation of a seed file, spliced with the others and with BER length bytes edited. */
const mutate = (seeds: Buffer[]): Mutant =>
  mutateBytes(rand, seeds[Math.floor(rand() * seeds.length)], {
    donors: seeds,
    extra: [lengthByte],
  });

/** The archive forms (contract 9) of small CMS objects, as openssl writes them and as mail holds them. */
function archiveSeeds(
  ssl: OpenSslDir,
  rsa: ReturnType<typeof makeKey>,
  ec: ReturnType<typeof makeKey>,
): Buffer[] {
  ssl.write(
    'mail.txt',
    Buffer.from('Dear archive,\nline two = with an equals sign\n\tand a tab\n'),
  );
  const enc = (args: string[]) =>
    ssl.run(['cms', '-encrypt', '-in', 'mail.txt', ...args, rsa.certFile]);
  const clear = (k: typeof rsa, args: string[]) =>
    ssl.run([
      'cms',
      '-sign',
      '-in',
      'mail.txt',
      '-signer',
      k.certFile,
      '-inkey',
      k.keyFile,
      ...args,
    ]);
  const smime = enc(['-aes-128-cbc']);
  const der = enc(['-aes-128-cbc', '-outform', 'DER']);
  const crlf = (b: Buffer) => Buffer.from(b.toString('latin1').replace(/\r?\n/g, '\r\n'), 'latin1');
  const qp = [...der].map((x) => `=${x.toString(16).toUpperCase().padStart(2, '0')}`).join('');
  return [
    smime,
    crlf(smime),
    enc(['-outform', 'PEM']),
    Buffer.from(der.toString('base64').replace(/.{64}/g, '$&\n')),
    clear(rsa, []),
    clear(ec, ['-text']),
    crlf(clear(rsa, ['-text'])),
    Buffer.from(
      `From: a@example.com\nContent-Type: multipart/mixed;\n boundary="b1"\n\npreamble\n--b1\nContent-Type: text/plain\n\nsee attached\n--b1\n${smime.toString('latin1')}\n--b1--\n`,
      'latin1',
    ),
    Buffer.from(
      `Content-Type: application/pkcs7-mime; smime-type=enveloped-data\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n${qp.replace(/.{72}/g, '$&=\r\n')}`,
      'latin1',
    ),
  ];
}

let app: TestApp;
let ssl: OpenSslDir;
let actor: Actor;
let seeds: Buffer[];

beforeAll(async () => {
  app = await startTestApp({ LOG_LEVEL: 'warn' });
  ssl = new OpenSslDir();
  const rsa = makeKey(ssl, 'fuzz-rsa', 'rsa-2048');
  const ec = makeKey(ssl, 'fuzz-p256', 'ec-p256');
  actor = await makeActor(app);
  // The RSA certificate is imported once per usage, so signed mutants reach the signing path too.
  await importKey(app, actor, ssl, rsa, 'encrypt');
  await importKey(app, actor, ssl, { ...rsa, kid: 'fuzz-rsa-signer' }, 'sign');
  await importKey(app, actor, ssl, ec);
  ssl.write('data.bin', randomBytes(3000));
  const sign = (k: typeof rsa, args: string[]) =>
    ssl.run([
      'cms',
      '-sign',
      '-binary',
      '-in',
      'data.bin',
      '-signer',
      k.certFile,
      '-inkey',
      k.keyFile,
      '-outform',
      'DER',
      '-nodetach',
      ...args,
    ]);
  const encrypt = (args: string[], input = 'data.bin') =>
    ssl.run([
      'cms',
      '-encrypt',
      '-binary',
      '-in',
      input,
      '-recip',
      rsa.certFile,
      '-outform',
      'DER',
      ...args,
    ]);
  ssl.write('signed.der', sign(ec, []));
  // One seed larger than the pre-buffered output, so mutants also reach the cut-off path.
  ssl.write('large.bin', randomBytes(200_000));
  seeds = [
    sign(rsa, []),
    sign(rsa, ['-stream']),
    sign(ec, ['-noattr']),
    encrypt(['-aes-256-cbc']),
    encrypt(['-aes-128-cbc', '-stream']),
    encrypt(['-aes-256-cbc'], 'signed.der'),
    encrypt(['-aes-256-cbc', '-stream'], 'large.bin'),
    // Several recipients, a password recipient beside the key one, gpgsm's armour label (issue 26).
    encrypt(['-aes-256-cbc', ec.certFile]),
    encrypt(['-aes-256-cbc', '-pwri_password', 'fuzz']),
    Buffer.from(
      `-----BEGIN ENCRYPTED MESSAGE-----\n${encrypt(['-aes-128-cbc'])
        .toString('base64')
        .replace(/.{64}/g, '$&\n')}\n-----END ENCRYPTED MESSAGE-----\n`,
    ),
    ...archiveSeeds(ssl, rsa, ec),
  ];
});

afterAll(async () => {
  ssl.cleanup();
  await app.stop();
});

describe(`fuzzing analyze and convert over HTTP for ${SECONDS} s (FUZZ_SEED=${SEED})`, () => {
  it(
    'when mutated CMS files are sent, then every answer is a problem, a 200 or a cut-off 200, never a 5xx or a hang, and /healthz answers after',
    async () => {
      const failures: string[] = [];
      const tally: Record<string, number> = {};
      const stopAt = Date.now() + SECONDS * 1000;
      const auth = { authorization: `Bearer ${actor.user}` };

      async function check(
        kind: string,
        how: string,
        p: Promise<Awaited<ReturnType<typeof postWithDeadline>>>,
      ): Promise<void> {
        const r = await p;
        const key = r.hung
          ? 'hung'
          : r.status === 0
            ? 'no answer'
            : r.cut
              ? `${r.status} cut`
              : String(r.status);
        tally[`${kind} ${key}`] = (tally[`${kind} ${key}`] ?? 0) + 1;
        const ok =
          !r.hung &&
          ((r.status >= 400 &&
            r.status < 500 &&
            r.contentType.startsWith('application/problem+json')) ||
            r.status === 200);
        if (!ok) failures.push(`${kind}: ${how} → ${key} ${r.body.subarray(0, 300).toString()}`);
      }

      async function worker(): Promise<void> {
        while (Date.now() < stopAt && failures.length < 5) {
          const { data, how } = mutate(seeds);
          const metadata = Math.floor(rand() * 4) === 0 ? '{"contentEncryption":"preserve"}' : '{}';
          const form = formBody([
            ['metadata', metadata],
            ['file', data],
          ]);
          await check(
            'analyze',
            how,
            postWithDeadline(
              `${app.url}${ANALYZE}`,
              { ...auth, 'content-type': 'application/pkcs7-mime' },
              data,
              DEADLINE_MS,
            ),
          );
          await check(
            'convert',
            how,
            postWithDeadline(
              `${app.url}${CONVERT}`,
              { ...auth, 'content-type': form.contentType },
              form.body,
              DEADLINE_MS,
            ),
          );
        }
      }

      await Promise.all(Array.from({ length: CONCURRENCY }, worker));
      const total = Object.values(tally).reduce((a, b) => a + b, 0);
      console.log(
        `fuzz: ${total} requests in ${SECONDS} s, seed ${SEED}: ${JSON.stringify(tally)}`,
      );
      if (failures.length)
        console.log(
          app
            .logText()
            .split('\n')
            .filter((l) => l.includes('"level":50'))
            .slice(0, 5)
            .join('\n'),
        );
      expect(failures).toEqual([]);
      expect(total).toBeGreaterThan(100);
      expect((await fetch(`${app.url}/healthz`)).status).toBe(200);
    },
    (SECONDS + 60) * 1000,
  );
});
