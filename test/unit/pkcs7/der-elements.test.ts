/**
 * The plain-DER reading of SignerInfo, RecipientInfo and AlgorithmIdentifier (shared/pkcs7/der-elements.ts) against
 * the @peculiar schema parser it stands in for: on what openssl writes, and on seeded mutations
 * of it, whatever the walk reads is exactly the schema parser's object, and whatever the schema
 * parser refuses the walk does not read.
 */
import { isDeepStrictEqual } from 'node:util';
import { RecipientInfo, SignerInfo } from '@peculiar/asn1-cms';
import { AlgorithmIdentifier } from '@peculiar/asn1-x509';
import { randomBytes } from 'node:crypto';
import { parseAsn, walk } from '../../../shared/asn1/der.ts';
import {
  NAME_CACHE_SIZE,
  plainAlgorithm,
  plainRecipientInfo,
  plainSignerInfo,
} from '../../../shared/pkcs7/der-elements.ts';
import { OpenSslDir, buildEd25519SignedData, makeKey } from '../../../support/fixtures/pkcs7.ts';
import type { TestKey } from '../../../support/fixtures/pkcs7.ts';
import { prng } from '../../../support/prng.ts';

/** The elements of the last (signers) or second (recipients) SET of a CMS message's body. */
function elements(cms: Buffer, which: 'signers' | 'recipients'): Buffer[] {
  const ci = walk(cms)!;
  const f = walk(cms, ci[0].valueStart, ci[0].end)!;
  const body = walk(cms, f[1].valueStart, f[1].end)!;
  const fields = walk(cms, body[0].valueStart, body[0].end)!;
  const set = which === 'signers' ? fields[fields.length - 1] : fields[1];
  return walk(cms, set.valueStart, set.end)!.map((n) => cms.subarray(n.start, n.end));
}

type Kind = 'signers' | 'recipients' | 'algorithms';
type Parsed = SignerInfo | RecipientInfo | AlgorithmIdentifier;
const TYPES = { signers: SignerInfo, recipients: RecipientInfo, algorithms: AlgorithmIdentifier };
const PLAIN = {
  signers: plainSignerInfo,
  recipients: plainRecipientInfo,
  algorithms: plainAlgorithm,
};
const schema = (der: Buffer, type: new () => Parsed): Parsed | Error => {
  try {
    return parseAsn(der, type, 'x', 'cms_malformed');
  } catch (err) {
    return err as Error;
  }
};

/** What the walk reads is exactly the schema's parse; it reads nothing the schema refuses. */
function agrees(der: Buffer, kind: Kind): 'read' | 'left' {
  const mine = PLAIN[kind](der);
  if (mine === null) return 'left';
  const theirs = schema(der, TYPES[kind]);
  if (theirs instanceof Error || !isDeepStrictEqual(mine, theirs))
    throw new Error(`the walk differs from the schema on ${der.toString('hex')}`);
  return 'read';
}

describe('SignerInfo, RecipientInfo and AlgorithmIdentifier read by the DER walk', () => {
  let ssl: OpenSslDir;
  const signers: Buffer[] = [];
  const recipients: Buffer[] = [];
  const algorithms: Buffer[] = [];
  beforeAll(() => {
    ssl = new OpenSslDir();
    const keys: TestKey[] = [
      makeKey(ssl, 'rsa', 'rsa-2048'),
      makeKey(ssl, 'ec', 'ec-p256'),
      makeKey(ssl, 'pss', 'rsa-pss-2048'),
    ];
    const ed = makeKey(ssl, 'ed', 'ed25519');
    ssl.write('data.txt', randomBytes(300));
    const cms = (args: string[]) => ssl.run(['cms', '-in', 'data.txt', '-outform', 'DER', ...args]);
    for (const k of keys) {
      signers.push(
        ...elements(cms(['-sign', '-signer', k.certFile, '-inkey', k.keyFile]), 'signers'),
      );
      signers.push(
        ...elements(
          cms(['-sign', '-noattr', '-md', 'sha512', '-signer', k.certFile, '-inkey', k.keyFile]),
          'signers',
        ),
      );
      signers.push(
        ...elements(
          cms(['-sign', '-keyid', '-signer', k.certFile, '-inkey', k.keyFile]),
          'signers',
        ),
      );
    }
    // openssl cms cannot sign with Ed25519 (RFC 8419 needs SHA-512 and no prehash).
    signers.push(...elements(buildEd25519SignedData(ed, randomBytes(100)), 'signers'));
    signers.push(
      ...elements(
        cms([
          '-sign',
          '-signer',
          keys[0].certFile,
          '-inkey',
          keys[0].keyFile,
          '-keyopt',
          'rsa_padding_mode:pss',
          '-md',
          'sha384',
        ]),
        'signers',
      ),
    );
    recipients.push(
      ...elements(
        cms(['-encrypt', '-aes-256-cbc', keys[0].certFile, keys[1].certFile]),
        'recipients',
      ),
      ...elements(
        cms([
          '-encrypt',
          '-aes-128-cbc',
          '-recip',
          keys[0].certFile,
          '-keyopt',
          'rsa_padding_mode:oaep',
          '-keyopt',
          'rsa_oaep_md:sha256',
        ]),
        'recipients',
      ),
      ...elements(cms(['-encrypt', '-aes-128-cbc', '-keyid', keys[0].certFile]), 'recipients'),
    );
  });
  afterAll(() => ssl.cleanup());

  beforeAll(() => {
    // Digest, signature and key-encryption algorithms (with NULL, none, RSASSA-PSS and RSAES-OAEP
    // parameters), and content-encryption algorithms with their IVs.
    const fields = (b: Buffer) => walk(b, walk(b)![0].valueStart, walk(b)![0].end)!;
    // (A SignerInfo's second field is its sid.)
    for (const s of signers)
      for (const [i, f] of fields(s).entries())
        if (i > 1 && f.tag === 0x30) algorithms.push(s.subarray(f.start, f.end));
    for (const r of recipients.filter((x) => x[0] === 0x30)) {
      const f = fields(r)[2];
      algorithms.push(r.subarray(f.start, f.end));
    }
    for (const cipher of ['-aes-128-cbc', '-aes-256-cbc', '-des3']) {
      const cms = ssl.run([
        'cms',
        '-in',
        'data.txt',
        '-outform',
        'DER',
        '-encrypt',
        cipher,
        'rsa.crt',
      ]);
      const ci = walk(cms)!;
      const top = walk(cms, ci[0].valueStart, ci[0].end)!;
      const body = walk(cms, top[1].valueStart, top[1].end)!;
      const env = walk(cms, body[0].valueStart, body[0].end)!;
      const info = walk(cms, env[2].valueStart, env[2].end)!;
      algorithms.push(cms.subarray(info[1].start, info[1].end));
    }
  });

  it('when openssl writes them, then the walk reads the plain ones exactly as the schema does', () => {
    const outcomes = [
      ...signers.map((s) => agrees(s, 'signers')),
      ...recipients.map((r) => agrees(r, 'recipients')),
    ];
    expect(algorithms.map((a) => agrees(a, 'algorithms'))).not.toContain('left');
    // RSA, EC, RSASSA-PSS and Ed25519 signers by issuer and serial (8), and the two RSA
    // recipients by issuer and serial.
    expect(outcomes.filter((o) => o === 'read').length).toBe(10);
    // By subject key identifier (and the key agreement recipient): left to the schema.
    expect(outcomes).toContain('left');
  });

  it('when their bytes are mutated, truncated or extended, then the walk never reads what the schema would not', () => {
    const rand = prng(37);
    let read = 0;
    for (const [list, kind] of [
      [signers, 'signers'],
      [recipients, 'recipients'],
      [algorithms, 'algorithms'],
    ] as const) {
      for (const base of list) {
        for (let n = 0; n < 150; n++) {
          const b = Buffer.from(base);
          const what = rand();
          if (what < 0.6) {
            for (let k = 1 + Math.floor(rand() * 3); k > 0; k--)
              b[Math.floor(rand() * b.length)] = Math.floor(rand() * 256);
            if (agrees(b, kind) === 'read') read += 1;
          } else if (what < 0.8) {
            agrees(b.subarray(0, Math.floor(rand() * b.length)), kind);
          } else {
            agrees(Buffer.concat([b, Buffer.from([0x05, 0x00])]), kind);
          }
        }
      }
    }
    // Mutations inside a signature, a serial or a signing-time digit are still plain DER.
    expect(read).toBeGreaterThan(0);
  });

  it('when more issuers than its memo holds pass through, then each still reads as the schema does', () => {
    const base = signers.find((s) => plainSignerInfo(s) !== null)!;
    for (let i = 0; i < NAME_CACHE_SIZE + 20; i++) {
      const b = Buffer.from(base);
      const at = b.indexOf(Buffer.from('rsa'));
      // The issuer's CN is 'rsa': change its three letters, a new issuer each time.
      b.write((i % 4096).toString(36).padStart(3, '0'), at, 'latin1');
      expect(agrees(b, 'signers')).toBe('read');
    }
  });
});
