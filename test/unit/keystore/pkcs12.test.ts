import { parseKeystore } from '../../../shared/keystore/index.ts';
import { readPkcs12 } from '../../../shared/keystore/pkcs12.ts';
import { WorkBudget } from '../../../shared/keystore/pkcs12-kdf.ts';
import {
  LEAF_SERIAL,
  PASSWORD,
  certDer,
  exportPkcs12,
  fixtureDir,
  makeKeysAndCertificates,
  opensslName,
  opensslSerial,
  pkcs12Info,
  problemOf,
  proveKeyMatchesCertificate,
  spkiDer,
} from './fixtures.ts';

const fx = fixtureDir();
beforeAll(() => makeKeysAndCertificates(fx));
afterAll(() => fx.cleanup());

const FLAVOURS: [string, string[]][] = [
  ['the OpenSSL 3 default (PBES2 AES-256-CBC, SHA-256 MAC)', []],
  ['-legacy (3DES key, RC2-40 certificates, SHA-1 MAC)', ['-legacy']],
  [
    '-legacy with 3DES for the certificates too',
    ['-legacy', '-certpbe', 'PBE-SHA1-3DES', '-keypbe', 'PBE-SHA1-3DES'],
  ],
];
const KEYS: [string, string][] = [
  ['rsa', 'rsa-2048'],
  ['p256', 'ec-p256'],
  ['p384', 'ec-p384'],
  ['ed25519', 'ed25519'],
];

/** Replaces the first occurrence of `from` (hex) in `data` by `to` (hex), which must exist. */
function patch(data: Buffer, from: string, to: string): Buffer {
  const at = data.indexOf(Buffer.from(from, 'hex'));
  expect(at).toBeGreaterThanOrEqual(0);
  const out = Buffer.from(data);
  Buffer.from(to, 'hex').copy(out, at);
  return out;
}

describe.each(FLAVOURS)('when the PKCS#12 file is %s', (_name, options) => {
  it.each(KEYS)(
    'then the %s key imports as %s and signs what its certificate verifies',
    (key, type) => {
      const file = `${key}-${options.join('')}.p12`;
      exportPkcs12(
        fx,
        file,
        `${key}.key`,
        `${key}.crt`,
        '-passout',
        `pass:${PASSWORD}`,
        '-name',
        `${key} alias`,
        ...options,
      );

      const entries = parseKeystore({ data: fx.read(file), password: PASSWORD });

      expect(entries).toHaveLength(1);
      const [entry] = entries;
      expect(entry.type).toBe(type);
      expect(entry.friendlyName).toBe(`${key} alias`);
      expect(entry.certificates).toEqual([certDer(fx, `${key}.crt`)]);
      expect(entry.publicKey.export({ type: 'spki', format: 'der' })).toEqual(
        spkiDer(fx, `${key}.key`),
      );
      expect(entry.certificate).toEqual({
        subject: opensslName(fx, `${key}.crt`, 'subject'),
        issuer: opensslName(fx, `${key}.crt`, 'issuer'),
        serialNumber: opensslSerial(fx, `${key}.crt`),
        notBefore: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.000Z$/),
        notAfter: expect.stringMatching(/Z$/),
      });
      proveKeyMatchesCertificate(entry);
    },
  );

  it('then a leaf with its chain imports with the leaf first and the chain after it', () => {
    const file = `chain-${options.join('')}.p12`;
    exportPkcs12(
      fx,
      file,
      'p384.key',
      'leaf.crt',
      '-certfile',
      'chain.pem',
      '-passout',
      `pass:${PASSWORD}`,
      ...options,
    );

    const [entry] = parseKeystore({ data: fx.read(file), password: PASSWORD });

    expect(entry.type).toBe('ec-p384');
    const chain = [certDer(fx, 'leaf.crt'), certDer(fx, 'inter.crt'), certDer(fx, 'root.crt')];
    expect(new Set(entry.certificates.map((c) => c.toString('hex')))).toEqual(
      new Set(chain.map((c) => c.toString('hex'))),
    );
    expect(entry.certificates[0]).toEqual(chain[0]);
    expect(entry.serialNumber).toEqual(Buffer.from(LEAF_SERIAL, 'hex'));
    expect(entry.certificate?.serialNumber).toBe(opensslSerial(fx, 'leaf.crt'));
    expect(entry.certificate?.issuer).toBe(opensslName(fx, 'inter.crt', 'subject'));
    proveKeyMatchesCertificate(entry);
  });
});

describe('parseKeystore with other PKCS#12 options', () => {
  it.each(['sha384', 'sha512', 'sha1'])('when the MAC uses %s, then the file imports', (macalg) => {
    const data = exportPkcs12(
      fx,
      `mac-${macalg}.p12`,
      'rsa.key',
      'rsa.crt',
      '-passout',
      'pass:pw',
      '-macalg',
      macalg,
    );
    expect(parseKeystore({ data, password: 'pw' })[0].type).toBe('rsa-2048');
  });

  it('when the key uses PBES2 with AES-128 and the certificates are not encrypted, then it imports', () => {
    exportPkcs12(
      fx,
      'aes128.p12',
      'p256.key',
      'p256.crt',
      '-passout',
      'pass:pw',
      '-keypbe',
      'AES-128-CBC',
      '-certpbe',
      'NONE',
    );
    proveKeyMatchesCertificate(parseKeystore({ data: fx.read('aes128.p12'), password: 'pw' })[0]);
  });

  it('when the file was written with an empty password, then it imports with no password and with ""', () => {
    exportPkcs12(fx, 'empty-pw.p12', 'rsa.key', 'rsa.crt', '-passout', 'pass:');
    expect(parseKeystore({ data: fx.read('empty-pw.p12') })[0].type).toBe('rsa-2048');
    expect(parseKeystore({ data: fx.read('empty-pw.p12'), password: '' })[0].type).toBe('rsa-2048');
  });

  it('when the file has neither MAC nor encryption, then it imports without a password', () => {
    exportPkcs12(
      fx,
      'plain.p12',
      'ed25519.key',
      'ed25519.crt',
      '-passout',
      'pass:',
      '-keypbe',
      'NONE',
      '-certpbe',
      'NONE',
      '-nomac',
    );
    proveKeyMatchesCertificate(parseKeystore({ data: fx.read('plain.p12') })[0]);
  });

  it('when the file holds only certificates, then keystore-empty', () => {
    fx.openssl(
      'pkcs12',
      '-export',
      '-nokeys',
      '-in',
      'chain.pem',
      '-out',
      'certs-only.p12',
      '-passout',
      'pass:pw',
    );
    const problem = problemOf(() =>
      parseKeystore({ data: fx.read('certs-only.p12'), password: 'pw' }),
    );
    expect(problem).toMatchObject({ code: 'keystore_empty', status: 400, slug: 'keystore-empty' });
    expect(problem.message).toMatch(/2 certificate\(s\) and no private key/);
  });
});

describe('parseKeystore with a wrong PKCS#12 password', () => {
  beforeAll(() => {
    exportPkcs12(fx, 'modern.p12', 'rsa.key', 'rsa.crt', '-passout', `pass:${PASSWORD}`);
    exportPkcs12(fx, 'legacy.p12', 'rsa.key', 'rsa.crt', '-passout', `pass:${PASSWORD}`, '-legacy');
    // OpenSSL 3.0 quirk: -nomac turns certificate encryption off unless -certpbe comes after it.
    exportPkcs12(
      fx,
      'nomac.p12',
      'rsa.key',
      'rsa.crt',
      '-passout',
      `pass:${PASSWORD}`,
      '-nomac',
      '-certpbe',
      'AES-256-CBC',
    );
    exportPkcs12(
      fx,
      'nomac-legacy.p12',
      'rsa.key',
      'rsa.crt',
      '-passout',
      `pass:${PASSWORD}`,
      '-legacy',
      '-nomac',
      '-certpbe',
      'PBE-SHA1-RC2-40',
    );
  });

  it('when the fixtures without MAC are made, then OpenSSL wrote them as intended (no MAC, encrypted certificates)', () => {
    expect(pkcs12Info(fx, 'nomac.p12', PASSWORD)).toMatch(
      /PKCS7 Encrypted data: PBES2, PBKDF2, AES-256-CBC/,
    );
    expect(pkcs12Info(fx, 'nomac-legacy.p12', PASSWORD)).toMatch(
      /PKCS7 Encrypted data: pbeWithSHA1And40BitRC2-CBC/,
    );
    expect(pkcs12Info(fx, 'legacy.p12', PASSWORD)).toMatch(
      /MAC: sha1[\s\S]*pbeWithSHA1And40BitRC2-CBC[\s\S]*pbeWithSHA1And3-KeyTripleDES-CBC/,
    );
  });

  it.each(['modern.p12', 'legacy.p12'])(
    'when the password of %s is wrong, then keystore-password-invalid says the MAC failed',
    (file) => {
      const problem = problemOf(() =>
        parseKeystore({ data: fx.read(file), password: 'passwörd-€' }),
      );
      expect(problem).toMatchObject({
        code: 'keystore_password_invalid',
        status: 400,
        slug: 'keystore-password-invalid',
      });
      expect(problem.message).toBe(
        'MAC verification failed: the password is wrong or the file was altered',
      );
    },
  );

  it('when no password is given for a protected file, then keystore-password-invalid says one is needed', () => {
    const problem = problemOf(() => parseKeystore({ data: fx.read('modern.p12') }));
    expect(problem).toMatchObject({ code: 'keystore_password_invalid' });
    expect(problem.message).toMatch(/needs a password/);
  });

  it('when one byte of the protected content is altered, then the MAC catches it', () => {
    const data = fx.read('modern.p12');
    data[data.length - 200] ^= 0x01;
    expect(problemOf(() => parseKeystore({ data, password: PASSWORD })).code).toBe(
      'keystore_password_invalid',
    );
  });

  it.each(['nomac.p12', 'nomac-legacy.p12'])(
    'when %s (no MAC) gets the wrong password, then keystore-password-invalid says decryption failed',
    (file) => {
      const problem = problemOf(() => parseKeystore({ data: fx.read(file), password: 'wrong' }));
      expect(problem).toMatchObject({ code: 'keystore_password_invalid' });
      expect(problem.message).toMatch(
        /^decryption failed: the password does not decrypt the encrypted SafeContents/,
      );
    },
  );

  it('when a file without MAC gets the right password, then it imports (RC2 certificates included)', () => {
    const [entry] = parseKeystore({ data: fx.read('nomac-legacy.p12'), password: PASSWORD });
    proveKeyMatchesCertificate(entry);
  });
});

describe('parseKeystore with PKCS#12 algorithms it does not support', () => {
  it('when the key is encrypted with RC4 (-keypbe PBE-SHA1-RC4-128), then 415 names the scheme and its OID', () => {
    exportPkcs12(
      fx,
      'rc4.p12',
      'rsa.key',
      'rsa.crt',
      '-passout',
      'pass:pw',
      '-legacy',
      '-keypbe',
      'PBE-SHA1-RC4-128',
    );
    const problem = problemOf(() => parseKeystore({ data: fx.read('rc4.p12'), password: 'pw' }));
    expect(problem).toMatchObject({
      code: 'keystore_unsupported_algorithm',
      status: 415,
      slug: 'keystore-unsupported-algorithm',
    });
    expect(problem.message).toBe(
      'unsupported encryption algorithm: pbeWithSHAAnd128BitRC4 (OID 1.2.840.113549.1.12.1.1)',
    );
  });

  it('when the key uses PBES2 with Camellia, then 415 names the cipher OID', () => {
    exportPkcs12(
      fx,
      'camellia.p12',
      'rsa.key',
      'rsa.crt',
      '-passout',
      'pass:pw',
      '-keypbe',
      'CAMELLIA-256-CBC',
    );
    const problem = problemOf(() =>
      parseKeystore({ data: fx.read('camellia.p12'), password: 'pw' }),
    );
    expect(problem).toMatchObject({ code: 'keystore_unsupported_algorithm', status: 415 });
    expect(problem.message).toBe(
      'unsupported PBES2 encryption scheme: OID 1.2.392.200011.61.1.1.1.4',
    );
  });

  it('when one byte of the key cipher OID is edited (aes256-CBC to .43), then 415 names the unknown OID', () => {
    exportPkcs12(fx, 'edit-cipher.p12', 'rsa.key', 'rsa.crt', '-passout', 'pass:pw', '-nomac');
    // 2.16.840.1.101.3.4.1.42 (aes256-CBC) becomes 2.16.840.1.101.3.4.1.43, which names nothing.
    const data = patch(
      fx.read('edit-cipher.p12'),
      '060960864801650304012a',
      '060960864801650304012b',
    );
    const problem = problemOf(() => parseKeystore({ data, password: 'pw' }));
    expect(problem).toMatchObject({
      code: 'keystore_unsupported_algorithm',
      details: { oid: '2.16.840.1.101.3.4.1.43' },
    });
  });

  it('when the PBE scheme OID itself is edited to an unknown one, then 415 names it', () => {
    exportPkcs12(
      fx,
      'edit-pbe.p12',
      'rsa.key',
      'rsa.crt',
      '-passout',
      'pass:pw',
      '-legacy',
      '-nomac',
    );
    // pbeWithSHAAnd3-KeyTripleDES-CBC (1.2.840.113549.1.12.1.3) becomes ...12.1.99.
    const data = patch(
      fx.read('edit-pbe.p12'),
      '060a2a864886f70d010c0103',
      '060a2a864886f70d010c0163',
    );
    const problem = problemOf(() => parseKeystore({ data, password: 'pw' }));
    expect(problem).toMatchObject({ code: 'keystore_unsupported_algorithm', status: 415 });
    expect(problem.message).toBe('unsupported encryption algorithm: OID 1.2.840.113549.1.12.1.99');
  });

  it('when the iteration counts need more work than the budget allows, then keystore-malformed before deriving', () => {
    exportPkcs12(fx, 'budget.p12', 'rsa.key', 'rsa.crt', '-passout', 'pass:pw');
    const problem = problemOf(() => readPkcs12(fx.read('budget.p12'), 'pw', new WorkBudget(1000)));
    expect(problem).toMatchObject({ code: 'keystore_malformed' });
    expect(problem.message).toBe(
      'iteration count 2048 exceeds what this service derives per keystore',
    );
  });
});
