/**
 * Mutation fuzzing of the PEM reader at the text level (shared/keystore/pem.ts through
 * parseKeystore), for a bounded time (FUZZ_SECONDS, default 2; FUZZ_SEED replays a run): real
 * OpenSSL bundles (PKCS#8, encrypted PKCS#8, SEC 1, traditional encrypted SEC 1 with Proc-Type
 * headers, certificates and chains) get lines dropped, duplicated and swapped, labels exchanged,
 * encapsulation headers invented, base64 spoiled, line endings changed and blocks nested or cut.
 * The DER inside the blocks is fuzzed by test/unit/keystore/hostile.test.ts; PKCS#12 too.
 * Every outcome must be entries or a keystore problem below 500, never a raw exception.
 */
import { AppError } from '../../shared/errors/index.ts';
import { isKeystoreProblem, parseKeystore } from '../../shared/keystore/index.ts';
import { fixtureDir } from '../unit/keystore/fixtures.ts';
import { prng } from '../../support/prng.ts';

const SECONDS = Number(process.env.FUZZ_SECONDS ?? 2);
const SEED = Number(process.env.FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));
const rand = prng(SEED);
const int = (n: number) => Math.floor(rand() * n);
const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)];

const LABELS = [
  'PRIVATE KEY',
  'ENCRYPTED PRIVATE KEY',
  'EC PRIVATE KEY',
  'RSA PRIVATE KEY',
  'CERTIFICATE',
  'TRUSTED CERTIFICATE',
  'X509 CRL',
  'OPENSSH PRIVATE KEY',
  'PUBLIC KEY',
  '',
  'private key',
];
const HEADERS = [
  'Proc-Type: 4,ENCRYPTED',
  'DEK-Info: AES-128-CBC,00112233445566778899AABBCCDDEEFF',
  'DEK-Info: AES-128-CBC,0011',
  'DEK-Info: DES-EDE3-CBC,',
  'DEK-Info: NOPE-CBC,00',
  'DEK-Info: AES-256-CBC,zz112233445566778899AABBCCDDEEFF',
  'Proc-Type: 4',
  'X-Other: value',
  ': no name',
  'Comment: "a comment"',
];

const fx = fixtureDir();
const seeds: string[] = [];

beforeAll(() => {
  fx.openssl(
    'genpkey',
    '-algorithm',
    'EC',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-out',
    'p256.key',
  );
  fx.openssl(
    'req',
    '-x509',
    '-key',
    'p256.key',
    '-subj',
    '/CN=fuzz p256',
    '-days',
    '30',
    '-out',
    'p256.crt',
  );
  fx.openssl('genpkey', '-algorithm', 'ED25519', '-out', 'ed.key');
  fx.openssl(
    'req',
    '-x509',
    '-key',
    'ed.key',
    '-subj',
    '/CN=fuzz ed25519',
    '-days',
    '30',
    '-out',
    'ed.crt',
  );
  const text = (name: string) => fx.read(name).toString('latin1');
  const key = text('p256.key');
  const cert = text('p256.crt');
  const sec1 = fx.openssl('ec', '-in', 'p256.key').toString('latin1');
  const sec1Encrypted = fx
    .openssl('ec', '-in', 'p256.key', '-aes128', '-passout', 'pass:pw')
    .toString('latin1');
  const pkcs8Encrypted = fx
    .openssl('pkcs8', '-topk8', '-in', 'p256.key', '-iter', '1', '-passout', 'pass:pw')
    .toString('latin1');
  seeds.push(
    key + cert,
    sec1 + cert,
    sec1Encrypted + cert,
    pkcs8Encrypted + cert,
    cert + key,
    text('ed.key') + text('ed.crt') + cert,
    `Bag Attributes\r\n    friendlyName: x\r\n${key.replace(/\n/g, '\r\n')}${cert}`,
  );
});
afterAll(() => fx.cleanup());

/** One text mutation, with a description for the failure message. */
function mutate(seed: string): { text: string; how: string } {
  const lines = seed.split('\n');
  const at = int(lines.length);
  switch (int(12)) {
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
      const label = pick(LABELS);
      const which = pick(['BEGIN', 'END']);
      const re = new RegExp(`-----${which} [^-]*-----`, 'g');
      let n = 0;
      const target = int(4);
      return {
        text: seed.replace(re, (m) => (n++ === target ? `-----${which} ${label}-----` : m)),
        how: `${which} label ${target} set to ${JSON.stringify(label)}`,
      };
    }
    case 4: {
      const header = pick(HEADERS);
      const begin = lines.findIndex((l, i) => i >= at && l.startsWith('-----BEGIN'));
      lines.splice(begin === -1 ? at : begin + 1, 0, header, ...(int(2) ? [''] : []));
      return { text: lines.join('\n'), how: `header ${JSON.stringify(header)} inserted` };
    }
    case 5: {
      const line = lines[at] ?? '';
      const col = int(line.length + 1);
      const junk = pick([
        '*',
        '=',
        '==',
        '\u0000',
        '\u00e9',
        ' ',
        '\t',
        '-----',
        '-----BEGIN CERTIFICATE-----',
        '\r',
      ]);
      lines[at] = line.slice(0, col) + junk + line.slice(col);
      return { text: lines.join('\n'), how: `${JSON.stringify(junk)} put in line ${at} at ${col}` };
    }
    case 6:
      return { text: seed.slice(0, int(seed.length)), how: 'truncated' };
    case 7:
      return {
        text:
          pick(['\r\n', '\r', '\n\n', ' \n']) === '\r'
            ? seed.replace(/\n/g, '\r')
            : seed.replace(/\n/g, pick(['\r\n', '\n\n', ' \n'])),
        how: 'line endings changed',
      };
    case 8:
      lines.splice(at, 0, 'A'.repeat(1 + int(200_000)));
      return { text: lines.join('\n'), how: `a long line inserted at ${at}` };
    case 9:
      return { text: seed + pick(seeds), how: 'two seeds concatenated' };
    case 10: {
      const inner = pick(seeds);
      return {
        text: lines.slice(0, at).join('\n') + '\n' + inner + lines.slice(at).join('\n'),
        how: `a bundle nested at line ${at}`,
      };
    }
    default: {
      // A base64 line of a block decoded, one byte changed, encoded again: valid base64, wrong DER.
      const b64 = lines
        .map((l, i) => [l, i] as const)
        .filter(([l]) => /^[A-Za-z0-9+/]{16,}={0,2}$/.test(l));
      if (!b64.length) return { text: seed, how: 'unmutated' };
      const [line, i] = pick(b64);
      const der = Buffer.from(line, 'base64');
      der[int(der.length)] = int(256);
      lines[i] = der.toString('base64');
      return { text: lines.join('\n'), how: `a byte of base64 line ${i} changed` };
    }
  }
}

describe(`fuzzing the PEM reader for ${SECONDS} s (FUZZ_SEED=${SEED})`, () => {
  it(
    'when real PEM bundles are mutated as text, then entries or a keystore problem below 500, never a raw exception',
    () => {
      const failures: string[] = [];
      const tally = new Map<string, number>();
      const stopAt = Date.now() + SECONDS * 1000;
      while (Date.now() < stopAt && failures.length < 5) {
        const { text, how } = mutate(pick(seeds));
        const password = pick(['pw', 'wrong', undefined]);
        let key: string;
        try {
          key = `imported ${parseKeystore({ data: Buffer.from(text, int(4) ? 'latin1' : 'utf8'), password }).length}`;
        } catch (err) {
          key = err instanceof AppError ? err.code : `raw ${String(err)}`;
          if (!(err instanceof AppError) || !isKeystoreProblem(err) || err.status >= 500)
            failures.push(`${how} → ${key}`);
        }
        tally.set(key, (tally.get(key) ?? 0) + 1);
      }
      console.log(`PEM fuzz, seed ${SEED}: ${JSON.stringify(Object.fromEntries(tally))}`);
      expect(failures).toEqual([]);
      expect(tally.size).toBeGreaterThanOrEqual(3);
    },
    (SECONDS + 30) * 1000,
  );
});
