import { AsnConvert } from '@peculiar/asn1-schema';
import { PrivateKey, PrivateKeyInfo } from '@peculiar/asn1-pkcs8';
import { AlgorithmIdentifier } from '@peculiar/asn1-x509';
import { parseKeystore } from '../../../shared/keystore/index.ts';
import { readPem } from '../../../shared/keystore/pem.ts';
import { WorkBudget } from '../../../shared/keystore/pkcs12-kdf.ts';
import {
  PASSWORD,
  certDer,
  exportPkcs12,
  fixtureDir,
  makeKeysAndCertificates,
  opensslSerial,
  problemOf,
  proveKeyMatchesCertificate,
  spkiDer,
} from './fixtures.ts';

const fx = fixtureDir();
beforeAll(() => {
  makeKeysAndCertificates(fx);
  fx.openssl(
    'pkey',
    '-in',
    'p256.key',
    '-aes256',
    '-passout',
    `pass:${PASSWORD}`,
    '-out',
    'p256-enc.key',
  );
  fx.openssl(
    'rsa',
    '-in',
    'rsa.key',
    '-aes256',
    '-traditional',
    '-passout',
    'pass:pem-pw',
    '-out',
    'rsa-trad-enc.key',
  );
  fx.openssl('ec', '-in', 'p384.key', '-out', 'p384-trad.key');
  fx.openssl(
    'pkcs8',
    '-topk8',
    '-in',
    'rsa.key',
    '-scrypt',
    '-passout',
    `pass:${PASSWORD}`,
    '-out',
    'rsa-scrypt.key',
  );
  fx.openssl(
    'pkcs8',
    '-topk8',
    '-in',
    'ed25519.key',
    '-v1',
    'PBE-SHA1-3DES',
    '-passout',
    `pass:${PASSWORD}`,
    '-out',
    'ed25519-v1.key',
  );
  fx.openssl(
    'pkcs8',
    '-topk8',
    '-in',
    'p384.key',
    '-v2',
    'aes-128-cbc',
    '-v2prf',
    'hmacWithSHA512',
    '-passout',
    `pass:${PASSWORD}`,
    '-out',
    'p384-v2.key',
  );
});
afterAll(() => fx.cleanup());

/** A PEM bundle from fixture files, in the order given. */
function bundle(...files: string[]): Buffer {
  return Buffer.concat(files.map((f) => fx.read(f)));
}

describe('parseKeystore with PEM', () => {
  it('when the bundle is an unencrypted PKCS#8 key and its certificate, then the key imports and works', () => {
    const [entry] = parseKeystore({ data: bundle('rsa.key', 'rsa.crt') });
    expect(entry.type).toBe('rsa-2048');
    expect(entry.certificates).toEqual([certDer(fx, 'rsa.crt')]);
    expect(entry.certificate?.serialNumber).toBe(opensslSerial(fx, 'rsa.crt'));
    proveKeyMatchesCertificate(entry);
  });

  it('when the certificates come before the key and in no order, then the leaf is found by its public key', () => {
    const [entry] = parseKeystore({
      data: bundle('root.crt', 'leaf.crt', 'p384.key', 'inter.crt'),
    });
    expect(entry.type).toBe('ec-p384');
    expect(entry.certificates).toEqual([
      certDer(fx, 'leaf.crt'),
      certDer(fx, 'root.crt'),
      certDer(fx, 'inter.crt'),
    ]);
    proveKeyMatchesCertificate(entry);
  });

  it('when the PEM holds only a key, then it imports with no certificate', () => {
    const [entry] = parseKeystore({ data: fx.read('ed25519.key') });
    expect(entry.type).toBe('ed25519');
    expect(entry.certificates).toEqual([]);
    expect(entry.certificate).toBeUndefined();
    expect(entry.issuerDer).toBeUndefined();
    expect(entry.publicKey.export({ type: 'spki', format: 'der' })).toEqual(
      spkiDer(fx, 'ed25519.key'),
    );
  });

  it('when the key is an ENCRYPTED PRIVATE KEY (openssl pkey -aes256) and the password is right, then it imports', () => {
    const [entry] = parseKeystore({ data: bundle('p256-enc.key', 'p256.crt'), password: PASSWORD });
    expect(entry.type).toBe('ec-p256');
    proveKeyMatchesCertificate(entry);
  });

  it('when the key is a traditional encrypted RSA PRIVATE KEY (Proc-Type), then it imports with its password', () => {
    const [entry] = parseKeystore({
      data: bundle('rsa-trad-enc.key', 'rsa.crt'),
      password: 'pem-pw',
    });
    proveKeyMatchesCertificate(entry);
  });

  it('when the key is an EC PRIVATE KEY (SEC 1), then it imports', () => {
    expect(fx.read('p384-trad.key').toString()).toMatch(/BEGIN EC PRIVATE KEY/);
    proveKeyMatchesCertificate(parseKeystore({ data: bundle('p384-trad.key', 'p384.crt') })[0]);
  });

  it('when the bundle has two keys and two certificates, then each key gets its own leaf', () => {
    const entries = parseKeystore({ data: bundle('p256.crt', 'rsa.key', 'rsa.crt', 'p256.key') });
    expect(entries.map((e) => e.type)).toEqual(['rsa-2048', 'ec-p256']);
    expect(entries[0].certificates).toEqual([certDer(fx, 'rsa.crt')]);
    expect(entries[1].certificates).toEqual([certDer(fx, 'p256.crt')]);
    entries.forEach(proveKeyMatchesCertificate);
  });

  it('when lines end in CRLF and text surrounds the blocks (openssl pkcs12 -nodes output), then it imports', () => {
    exportPkcs12(
      fx,
      'for-pem.p12',
      'p256.key',
      'p256.crt',
      '-passout',
      'pass:pw',
      '-name',
      'alias',
    );
    const text = fx
      .openssl('pkcs12', '-in', 'for-pem.p12', '-passin', 'pass:pw', '-nodes')
      .toString();
    expect(text).toMatch(/Bag Attributes/);
    const [entry] = parseKeystore({ data: Buffer.from(text.replaceAll('\n', '\r\n')) });
    proveKeyMatchesCertificate(entry);
  });
});

describe('parseKeystore with each kind of ENCRYPTED PRIVATE KEY', () => {
  it.each([
    ['scrypt and AES-256-CBC (openssl pkcs8 -scrypt)', 'rsa-scrypt.key', 'rsa.crt'],
    [
      'pbeWithSHAAnd3-KeyTripleDES-CBC (openssl pkcs8 -v1 PBE-SHA1-3DES)',
      'ed25519-v1.key',
      'ed25519.crt',
    ],
    ['PBKDF2-HMAC-SHA512 and AES-128-CBC', 'p384-v2.key', 'p384.crt'],
  ])('when the key uses %s, then it imports with the password and works', (_name, key, cert) => {
    proveKeyMatchesCertificate(parseKeystore({ data: bundle(key, cert), password: PASSWORD })[0]);
  });

  it('when the scrypt key gets a wrong password, then keystore-password-invalid', () => {
    const problem = problemOf(() =>
      parseKeystore({ data: fx.read('rsa-scrypt.key'), password: 'wrong' }),
    );
    expect(problem).toMatchObject({
      code: 'keystore_password_invalid',
      message: 'decryption failed: the password does not decrypt the PEM private key',
    });
  });

  it('when the derivation needs more work than the budget, then keystore-malformed before deriving', () => {
    const problem = problemOf(() =>
      readPem(fx.read('p256-enc.key'), PASSWORD, new WorkBudget(1000)),
    );
    expect(problem).toMatchObject({
      code: 'keystore_malformed',
      message: 'iteration count 2048 exceeds what this service derives per keystore',
    });
  });

  it('when the scrypt parameters ask for more than 64 MiB, then keystore-malformed without running scrypt', () => {
    const der = Buffer.from(
      fx
        .read('rsa-scrypt.key')
        .toString()
        .replace(/-----[^-]+-----|\s/g, ''),
      'base64',
    );
    // costParameter 16384, blockSize 8, parallelization 1 -> blockSize 127: 128 * 16384 * 127 bytes.
    const at = der.indexOf(Buffer.from('020240000201080201 01'.replaceAll(' ', ''), 'hex'));
    expect(at).toBeGreaterThan(0);
    der[at + 6] = 127;
    const pem = `-----BEGIN ENCRYPTED PRIVATE KEY-----\n${der.toString('base64')}\n-----END ENCRYPTED PRIVATE KEY-----\n`;
    const problem = problemOf(() => parseKeystore({ data: Buffer.from(pem), password: PASSWORD }));
    expect(problem).toMatchObject({
      code: 'keystore_malformed',
      message: 'scrypt parameters need 266338304 bytes of memory',
    });
  });
});

describe('parseKeystore with a PEM that cannot be imported', () => {
  it('when the passphrase is wrong, then keystore-password-invalid says decryption failed', () => {
    const problem = problemOf(() =>
      parseKeystore({ data: bundle('p256-enc.key', 'p256.crt'), password: 'wrong' }),
    );
    expect(problem).toMatchObject({
      code: 'keystore_password_invalid',
      status: 400,
      slug: 'keystore-password-invalid',
    });
    expect(problem.message).toBe(
      'decryption failed: the password does not decrypt the PEM private key',
    );
  });

  it('when the traditional key gets a wrong passphrase, then keystore-password-invalid', () => {
    expect(
      problemOf(() => parseKeystore({ data: fx.read('rsa-trad-enc.key'), password: 'wrong' })).code,
    ).toBe('keystore_password_invalid');
  });

  it('when the key is encrypted and no password is given, then keystore-password-invalid says one is needed', () => {
    const problem = problemOf(() => parseKeystore({ data: fx.read('p256-enc.key') }));
    expect(problem).toMatchObject({ code: 'keystore_password_invalid' });
    expect(problem.message).toBe('the PEM private key is encrypted and no password was given');
  });

  it('when the certificate belongs to another key, then keystore-key-mismatch', () => {
    const problem = problemOf(() => parseKeystore({ data: bundle('rsa.key', 'p256.crt') }));
    expect(problem).toMatchObject({
      code: 'keystore_key_mismatch',
      status: 400,
      slug: 'keystore-key-mismatch',
    });
    expect(problem.message).toBe(
      'none of the 1 certificate(s) holds the public key of private key #1',
    );
  });

  it('when the PEM holds certificates only, then keystore-empty names what it found', () => {
    const problem = problemOf(() => parseKeystore({ data: bundle('leaf.crt', 'chain.pem') }));
    expect(problem).toMatchObject({ code: 'keystore_empty', status: 400 });
    expect(problem.message).toBe(
      'the PEM input holds no private key (found: CERTIFICATE, CERTIFICATE, CERTIFICATE)',
    );
  });

  it('when the PEM is cut off inside a block, then keystore-malformed says it is truncated', () => {
    const text = bundle('rsa.key', 'rsa.crt').toString();
    const problem = problemOf(() =>
      parseKeystore({ data: Buffer.from(text.slice(0, text.length - 100)) }),
    );
    expect(problem).toMatchObject({ code: 'keystore_malformed' });
    expect(problem.message).toBe(
      "PEM block 'CERTIFICATE' has no END line (the input is truncated)",
    );
  });

  it('when a key block holds garbage, then keystore-malformed names the block', () => {
    const data = Buffer.from('-----BEGIN PRIVATE KEY-----\nAAAAAAAA\n-----END PRIVATE KEY-----\n');
    const problem = problemOf(() => parseKeystore({ data }));
    expect(problem).toMatchObject({ code: 'keystore_malformed' });
    expect(problem.message).toBe("PEM block 'PRIVATE KEY' is not a valid private key");
  });

  it('when a certificate block is not base64, then keystore-malformed', () => {
    const data = Buffer.concat([
      fx.read('rsa.key'),
      Buffer.from('-----BEGIN CERTIFICATE-----\n%%%%\n-----END CERTIFICATE-----\n'),
    ]);
    expect(problemOf(() => parseKeystore({ data })).message).toBe(
      "PEM block 'CERTIFICATE' is not valid base64",
    );
  });

  it('when the key is an OpenSSH private key, then 415 says how to convert it', () => {
    const data = Buffer.from(
      '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n',
    );
    const problem = problemOf(() => parseKeystore({ data }));
    expect(problem).toMatchObject({ code: 'keystore_unsupported_algorithm', status: 415 });
    expect(problem.message).toMatch(/ssh-keygen -p -m PKCS8/);
  });
});

describe('parseKeystore with a PKCS#8 key of an algorithm Node cannot load', () => {
  it('when the PRIVATE KEY names an unknown algorithm OID, then 415 names the OID', () => {
    // A well-formed PrivateKeyInfo for OID 1.3.6.1.4.1.99999.1 (made up), with a dummy key.
    const info = new PrivateKeyInfo({
      privateKeyAlgorithm: new AlgorithmIdentifier({ algorithm: '1.3.6.1.4.1.99999.1' }),
      privateKey: new PrivateKey(new Uint8Array(16)),
    });
    const der = Buffer.from(AsnConvert.serialize(info));
    const pem = `-----BEGIN PRIVATE KEY-----\n${der.toString('base64')}\n-----END PRIVATE KEY-----\n`;
    const problem = problemOf(() => parseKeystore({ data: Buffer.from(pem) }));
    expect(problem).toMatchObject({
      code: 'keystore_unsupported_algorithm',
      status: 415,
      details: { oid: '1.3.6.1.4.1.99999.1' },
    });
  });

  it('when the PRIVATE KEY names RSA but its key is damaged, then keystore-malformed says the key is damaged', () => {
    const info = new PrivateKeyInfo({
      privateKeyAlgorithm: new AlgorithmIdentifier({
        algorithm: '1.2.840.113549.1.1.1',
        parameters: new Uint8Array([5, 0]).buffer,
      }),
      privateKey: new PrivateKey(new Uint8Array(16)),
    });
    const pem = `-----BEGIN PRIVATE KEY-----\n${Buffer.from(AsnConvert.serialize(info)).toString('base64')}\n-----END PRIVATE KEY-----\n`;
    const problem = problemOf(() => parseKeystore({ data: Buffer.from(pem) }));
    expect(problem).toMatchObject({ code: 'keystore_malformed', status: 400 });
    expect(problem.message).toBe("the RSA private key in the PEM block 'PRIVATE KEY' is damaged");
  });
});
