/**
 * Mutation fuzzing of the archive-form reader (shared/pkcs7/container.ts) at the text
 * level, FUZZ_MUTANTS of them (default 300; FUZZ_SEED replays a run): S/MIME as openssl writes
 * it, clear-signed mail with and without -text and by two signers, PEM, gpgsm's armour labels,
 * bare base64, a .p7m inside a mail, quoted-printable, nested SignedData, get lines dropped, duplicated and swapped, headers invented or folded,
 * boundaries and transfer encodings changed, line endings changed, nesting added and text cut,
 * and are analyzed and converted in small chunks. Every outcome must be an answer or a problem
 * below 500, never a raw exception. Byte-level mutations of the same forms run over HTTP in
 * test/integration/migration/fuzz.test.ts.
 */
import { AppError } from '../../shared/errors/index.ts';
import { analyzePkcs7, convertPkcs7ToJose } from '../../shared/pkcs7/index.ts';
import {
  OpenSslDir,
  chunked,
  collect,
  makeKey,
  resolverFor,
  type TestKey,
} from '../../support/fixtures/pkcs7.ts';
import { prng } from '../../support/prng.ts';
import { cms } from '../../support/fixtures/cms.ts';

const MUTANTS = Number(process.env.FUZZ_MUTANTS ?? 300);
const SEED = Number(process.env.FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));
const rand = prng(SEED);
const int = (n: number) => Math.floor(rand() * n);
const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)];

const HEADERS = [
  'Content-Type: multipart/signed; protocol="application/pkcs7-signature"; boundary=x',
  'Content-Type: multipart/mixed; boundary="zz"',
  'Content-Type: application/pkcs7-mime; smime-type=enveloped-data',
  'Content-Type: message/rfc822',
  'Content-Transfer-Encoding: quoted-printable',
  'Content-Transfer-Encoding: x-uuencode',
  'Content-Transfer-Encoding: binary',
  ' folded continuation',
  'X-Long: ' + 'a'.repeat(70_000),
  'no colon here',
  '',
];

let ssl: OpenSslDir;
let rsa: TestKey;
let ec: TestKey;
const seeds: string[] = [];

beforeAll(() => {
  ssl = new OpenSslDir();
  rsa = makeKey(ssl, 'afz-rsa', 'rsa-2048');
  ec = makeKey(ssl, 'afz-ec', 'ec-p256');
  ssl.write('m.txt', Buffer.from('archived text\nsecond = line\n\tthird\n'));
  const smime = cms.encrypt(ssl, 'm.txt', { to: rsa, cipher: 'aes128' }).toString('latin1');
  const der = cms.encrypt(ssl, 'm.txt', { to: rsa, binary: true, outform: 'DER' });
  const clear = (k: TestKey, extra: string[]) =>
    cms.sign(ssl, 'm.txt', { by: k, extra }).toString('latin1');
  const signedDer = (input: string) =>
    cms.sign(ssl, input, { by: rsa, detached: false, binary: true, outform: 'DER' });
  const armour = (label: string, b: Buffer) =>
    `-----BEGIN ${label}-----\n${(b.toString('base64').match(/.{1,64}/g) ?? []).join('\n')}\n-----END ${label}-----\n`;
  // SignedData over SignedData, past the nesting limit, as S/MIME.
  let input = 'm.txt';
  for (let i = 0; i < 6; i++) {
    ssl.write(`n${i}.der`, signedDer(input));
    input = `n${i}.der`;
  }
  seeds.push(
    armour('SIGNED MESSAGE', signedDer('m.txt')),
    armour('ENCRYPTED MESSAGE', der),
    clear(rsa, ['-signer', ec.certFile, '-inkey', ec.keyFile]),
    `Content-Type: application/pkcs7-mime; smime-type=signed-data\nContent-Transfer-Encoding: base64\n\n${(
      ssl
        .read(input)
        .toString('base64')
        .match(/.{1,76}/g) ?? []
    ).join('\n')}\n`,
    smime,
    smime.replace(/\n/g, '\r\n'),
    clear(rsa, []),
    clear(ec, ['-text']),
    cms.encrypt(ssl, 'm.txt', { to: rsa, outform: 'PEM' }).toString('latin1'),
    (der.toString('base64').match(/.{1,76}/g) ?? []).join('\n'),
    `From: a@b\nContent-Type: multipart/mixed; boundary="b1"\n\npre\n--b1\nContent-Type: text/plain\n\nhi\n--b1\n${smime}\n--b1--\n`,
    `Content-Type: application/pkcs7-mime\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n${[
      ...der,
    ]
      .map((x) => `=${x.toString(16).toUpperCase().padStart(2, '0')}`)
      .join('')
      .replace(/.{72}/g, '$&=\r\n')}`,
  );
});

afterAll(() => ssl.cleanup());

function mutate(seed: string): { text: string; how: string } {
  const lines = seed.split('\n');
  const at = int(lines.length);
  switch (int(11)) {
    case 0:
      lines.splice(at, 1);
      return { text: lines.join('\n'), how: `line ${at} dropped` };
    case 1:
      lines.splice(at, 0, lines[int(lines.length)]);
      return { text: lines.join('\n'), how: `a line duplicated at ${at}` };
    case 2: {
      const other = int(lines.length);
      [lines[at], lines[other]] = [lines[other], lines[at]];
      return { text: lines.join('\n'), how: `lines ${at} and ${other} swapped` };
    }
    case 3: {
      const h = pick(HEADERS);
      lines.splice(int(Math.min(lines.length, 8)), 0, h);
      return { text: lines.join('\n'), how: `header ${JSON.stringify(h.slice(0, 60))} inserted` };
    }
    case 4:
      return { text: seed.slice(0, int(seed.length)), how: 'truncated' };
    case 5:
      return {
        text: seed.replace(/\r?\n/g, pick(['\r\n', '\n', '\r', '\n\n'])),
        how: 'line endings changed',
      };
    case 6:
      return {
        text: seed.replace(
          /boundary="?[^";\r\n]+"?/,
          `boundary="${pick(['', 'x', '-'.repeat(80), 'other'])}"`,
        ),
        how: 'boundary changed',
      };
    case 7: {
      let text = seed;
      const depth = 1 + int(7);
      for (let i = 0; i < depth; i++)
        text = `Content-Type: multipart/mixed; boundary=n${i}\n\n--n${i}\n${text}\n--n${i}--\n`;
      return { text, how: `nested ${depth} deep` };
    }
    case 8: {
      const line = lines[at] ?? '';
      const col = int(line.length + 1);
      const junk = pick(['*', '=', '-----END CMS-----', '\u00e9', '\0', '--', ':']);
      lines[at] = line.slice(0, col) + junk + line.slice(col);
      return { text: lines.join('\n'), how: `${JSON.stringify(junk)} put in line ${at}` };
    }
    case 9:
      return {
        text: seed.replace(
          /base64|quoted-printable/i,
          pick(['7bit', 'binary', 'base64', 'quoted-printable', 'x-gzip']),
        ),
        how: 'transfer encoding changed',
      };
    default:
      return { text: ' \n'.repeat(int(3)) + seed, how: 'leading blank lines' };
  }
}

describe(`fuzzing the archive-form reader with ${MUTANTS} mutants (FUZZ_SEED=${SEED})`, () => {
  it(
    'when archive forms are mutated at the text level, then analyze and convert answer or refuse with a problem below 500',
    async () => {
      const failures: string[] = [];
      const tally = new Map<string, number>();
      const resolver = resolverFor([rsa, ec]);
      for (let n = 0; n < MUTANTS && failures.length < 5; n++) {
        const { text, how } = mutate(pick(seeds));
        const data = Buffer.from(text, 'latin1');
        const size = pick([1, 7, 100, 4096]);
        for (const [what, run] of [
          ['analyze', () => analyzePkcs7(chunked(data, size), resolver).then((a) => a.container)],
          [
            'convert',
            async () =>
              collect(
                (await convertPkcs7ToJose(chunked(data, size), { metadata: {}, resolver })).body,
              ).then(() => 'ok'),
          ],
        ] as const) {
          let key: string;
          try {
            key = `${what} ${await run()}`;
          } catch (err) {
            key = `${what} ${err instanceof AppError ? err.code : `raw ${String(err)}`}`;
            if (!(err instanceof AppError) || err.status >= 500) failures.push(`${how} → ${key}`);
          }
          tally.set(key, (tally.get(key) ?? 0) + 1);
        }
      }
      console.log(`archive fuzz, seed ${SEED}: ${JSON.stringify(Object.fromEntries(tally))}`);
      expect(failures).toEqual([]);
      expect(tally.size).toBeGreaterThanOrEqual(5);
    },
    // Bounded by the count: small inputs, a few milliseconds each.
    120_000,
  );
});
