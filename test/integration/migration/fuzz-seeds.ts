/**
 * The seed files of the HTTP fuzzer (fuzz.test.ts), each made by its real producer in test setup:
 * openssl's signed and enveloped CMS (DER, BER, several signers and recipients, a password
 * recipient, nested 8 deep and at the nesting limit), its archive forms (S/MIME,
 * PEM, gpgsm's armour labels, bare base64, clear-signed mail, a .p7m inside a mail,
 * quoted-printable), a certificates-only .p7b, osslsigncode's PKCS#7 v1.5 content that is not an
 * OCTET STRING, and BouncyCastle's X25519 and X448 recipients. The keys that open them are
 * imported into the actor's tenant.
 */
import { randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { MAX_CMS_NESTING } from '../../../shared/pkcs7/nesting.ts';
import { prepareXdh, xdhEnvelopes, xdhKey } from '../../fixtures/xdh-envelope.ts';
import { importKey, makeKey, type Actor, type OpenSslDir, type TestApp } from './helpers.ts';
import { cms } from '../../../support/fixtures/cms.ts';

type Key = ReturnType<typeof makeKey>;

const armour = (label: string, der: Buffer) =>
  Buffer.from(
    `-----BEGIN ${label}-----\n${der.toString('base64').replace(/.{64}/g, '$&\n')}\n-----END ${label}-----\n`,
  );

/** The archive forms of small CMS objects, as openssl writes them and as mail holds them. */
function archiveSeeds(ssl: OpenSslDir, rsa: Key, ec: Key): Buffer[] {
  ssl.write(
    'mail.txt',
    Buffer.from('Dear archive,\nline two = with an equals sign\n\tand a tab\n'),
  );
  const enc = (args: string[]) => cms.encrypt(ssl, 'mail.txt', { to: rsa, extra: args });
  const clear = (k: Key, args: string[]) => cms.sign(ssl, 'mail.txt', { by: k, extra: args });
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

/** Authenticode by osslsigncode: PKCS#7 v1.5 content that is an SpcIndirectDataContent SEQUENCE. */
function authenticode(ssl: OpenSslDir, k: Key): Buffer {
  ssl.write('script.ps1', Buffer.from('Write-Host "fuzz"\r\n'));
  const run = (args: string[]) =>
    execFileSync('osslsigncode', args, { cwd: ssl.dir, stdio: ['ignore', 'pipe', 'pipe'] });
  run(['sign', '-certs', k.certFile, '-key', k.keyFile, '-in', 'script.ps1', '-out', 'signed.ps1']);
  run(['extract-signature', '-in', 'signed.ps1', '-out', 'authenticode.p7']);
  return ssl.read('authenticode.p7');
}

/**
 * A v1.5 content that is not an OCTET STRING with an indefinite length (no producer writes one:
 * a bad input seen in the field), its eContent a SpcIndirectDataContent type with 4 KiB in it.
 */
function indefiniteV15(): Buffer {
  const head = Buffer.from(
    '3080' + '06092a864886f70d010702' + 'a080' + '3080' + '020101' + '3100' + '3080',
    'hex',
  );
  const content = Buffer.from('060a2b060104018237020104' + 'a080' + '3080', 'hex');
  return Buffer.concat([head, content, Buffer.alloc(4096, 0x05), Buffer.alloc(16, 0)]);
}

/** Imports the fuzzer's keys into the actor's tenant and makes every seed. */
export async function fuzzSeeds(app: TestApp, actor: Actor, ssl: OpenSslDir): Promise<Buffer[]> {
  const rsa = makeKey(ssl, 'fuzz-rsa', 'rsa-2048');
  const ec = makeKey(ssl, 'fuzz-p256', 'ec-p256');
  // The RSA certificate is imported once per usage, so signed mutants reach the signing path too.
  await importKey(app, actor, ssl, rsa, 'encrypt');
  await importKey(app, actor, ssl, { ...rsa, kid: 'fuzz-rsa-signer' }, 'sign');
  await importKey(app, actor, ssl, ec);
  prepareXdh(ssl);
  await importKey(app, actor, ssl, xdhKey(ssl, 'fuzz-x25519', 'X25519'), 'encrypt');
  await importKey(app, actor, ssl, xdhKey(ssl, 'fuzz-x448', 'X448'), 'encrypt');
  ssl.write('data.bin', randomBytes(3000));
  xdhEnvelopes(ssl, {
    'xdh-25519': 'fuzz-x25519.crt,data.bin,%,sha256,aes256',
    'xdh-448': 'fuzz-x448.crt,data.bin,%,sha512,aes128',
  });
  const sign = (k: Key, args: string[], input = 'data.bin') =>
    cms.sign(ssl, input, {
      by: k,
      detached: false,
      binary: true,
      outform: 'DER',
      extra: args,
    });
  const encrypt = (args: string[], input = 'data.bin') =>
    cms.encrypt(ssl, input, { to: { recip: rsa }, binary: true, outform: 'DER', extra: args });
  /** SignedData over SignedData, `depth` in all. */
  const nested = (depth: number) => {
    let input = 'data.bin';
    for (let i = 1; i <= depth; i++) {
      const out = `nested-${depth}-${i}.der`;
      ssl.write(out, sign(i % 2 ? rsa : ec, [], input));
      input = out;
    }
    return ssl.read(input);
  };
  ssl.write('signed.der', sign(ec, []));
  // One seed larger than the pre-buffered output, so mutants also reach the cut-off path.
  ssl.write('large.bin', randomBytes(200_000));
  const signed = sign(rsa, []);
  ssl.run([
    'genpkey',
    '-algorithm',
    'RSA-PSS',
    '-pkeyopt',
    'rsa_keygen_bits:2048',
    '-out',
    'pss.key',
  ]);
  ssl.run(['req', '-x509', '-key', 'pss.key', '-subj', '/CN=fuzz-pss', '-out', 'pss.crt']);
  const pss = { ...rsa, keyFile: 'pss.key', certFile: 'pss.crt' };
  return [
    signed,
    sign(rsa, ['-stream']),
    sign(ec, ['-noattr']),
    encrypt(['-aes-256-cbc']),
    encrypt(['-aes-128-cbc', '-stream']),
    encrypt(['-aes-256-cbc'], 'signed.der'),
    encrypt(['-aes-256-cbc', '-stream'], 'large.bin'),
    // The forms outside producers write: several recipients and signers, a password recipient beside the key
    // one, gpgsm's armour labels, a .p7b, v1.5 content of another type (and without a length),
    // X25519 and X448 recipients, content types nested past the limit and at it.
    encrypt(['-aes-256-cbc', ec.certFile]),
    encrypt(['-aes-256-cbc', '-pwri_password', 'fuzz']),
    sign(rsa, ['-signer', ec.certFile, '-inkey', ec.keyFile]),
    armour('ENCRYPTED MESSAGE', encrypt(['-aes-128-cbc'])),
    armour('SIGNED MESSAGE', signed),
    ssl.run([
      'crl2pkcs7',
      '-nocrl',
      '-certfile',
      rsa.certFile,
      '-certfile',
      ec.certFile,
      '-outform',
      'DER',
    ]),
    authenticode(ssl, rsa),
    indefiniteV15(),
    ssl.read('xdh-25519.der'),
    ssl.read('xdh-448.der'),
    nested(8),
    nested(MAX_CMS_NESTING),
    ...archiveSeeds(ssl, rsa, ec),
    // SHA-3, RSASSA-PSS parameters, an id-RSASSA-PSS signer certificate.
    sign(rsa, ['-md', 'sha3-256']),
    sign(rsa, ['-md', 'sha384', '-keyopt', 'rsa_padding_mode:pss']),
    sign(pss, ['-md', 'sha512', '-keyopt', 'rsa_padding_mode:pss']),
  ];
}

/** Conversion metadata the mutants are sent with: the paths each option opens. */
export const FUZZ_METADATA = [
  '{}',
  '{"contentEncryption":"preserve"}',
  '{"password":"fuzz","targetKid":"fuzz-rsa"}',
  '{"targetKid":["fuzz-rsa","fuzz-p256"]}',
  '{"targetKid":"fuzz-rsa","recipientKid":"fuzz-x25519"}',
  '{"verify":"chain"}',
];
