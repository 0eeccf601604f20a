import {
  MAX_KEYSTORE_BYTES,
  isKeystoreProblem,
  parseKeystore,
} from '../../../shared/keystore/index.ts';
import {
  certDer,
  exportPkcs12,
  fixtureDir,
  makeKeysAndCertificates,
  problemOf,
} from './fixtures.ts';
import { prng } from '../../../support/prng.ts';

const fx = fixtureDir();
let modern: Buffer;
let fuzzBases: Buffer[];
beforeAll(() => {
  makeKeysAndCertificates(fx);
  modern = exportPkcs12(fx, 'modern.p12', 'rsa.key', 'rsa.crt', '-passout', 'pass:pw');
  // Fuzzing bases with one iteration and no MAC, so mutations reach the decryption and bag
  // parsing instead of stopping at the MAC (-iter must precede -nomac, -certpbe follow it).
  fuzzBases = [
    exportPkcs12(
      fx,
      'fuzz-modern.p12',
      'p384.key',
      'leaf.crt',
      '-certfile',
      'chain.pem',
      '-passout',
      'pass:pw',
      '-iter',
      '1',
      '-nomac',
      '-certpbe',
      'AES-256-CBC',
    ),
    exportPkcs12(
      fx,
      'fuzz-legacy.p12',
      'p384.key',
      'leaf.crt',
      '-certfile',
      'chain.pem',
      '-passout',
      'pass:pw',
      '-legacy',
      '-iter',
      '1',
      '-nomac',
      '-certpbe',
      'PBE-SHA1-RC2-40',
    ),
    exportPkcs12(
      fx,
      'fuzz-mac.p12',
      'rsa.key',
      'rsa.crt',
      '-passout',
      'pass:pw',
      '-iter',
      '1',
      '-nomaciter',
    ),
  ];
});
afterAll(() => fx.cleanup());

describe('parseKeystore with hostile input', () => {
  it('when the input is empty, then keystore-malformed', () => {
    expect(problemOf(() => parseKeystore({ data: Buffer.alloc(0) }))).toMatchObject({
      code: 'keystore_malformed',
      message: 'input is empty',
    });
  });

  it('when the input is over 1 MiB, then keystore-too-large (413) before any parsing', () => {
    const problem = problemOf(() =>
      parseKeystore({ data: Buffer.alloc(MAX_KEYSTORE_BYTES + 1, 0x30) }),
    );
    expect(problem).toMatchObject({
      code: 'keystore_too_large',
      status: 413,
      slug: 'keystore-too-large',
    });
    expect(problem.message).toBe('keystore is 1048577 bytes; the limit is 1048576');
  });

  it('when the input is random bytes, then keystore-malformed names the first bytes', () => {
    const next = prng(7);
    const data = Buffer.from(Array.from({ length: 512 }, () => Math.floor(next() * 256)));
    data[0] = 0x9c;
    data[1] = 0x01;
    const problem = problemOf(() => parseKeystore({ data }));
    expect(problem).toMatchObject({ code: 'keystore_malformed', status: 400 });
    expect(problem.message).toMatch(
      /^input is neither PKCS#12 DER nor PEM \(first bytes 0x9c 0x01 0x[0-9a-f]{2}/,
    );
  });

  it('when random bytes start like a DER SEQUENCE, then keystore-malformed, not a parser exception', () => {
    const next = prng(11);
    for (let i = 0; i < 50; i++) {
      const data = Buffer.from(Array.from({ length: 64 + i * 7 }, () => Math.floor(next() * 256)));
      data[0] = 0x30;
      expect(problemOf(() => parseKeystore({ data })).code).toBe('keystore_malformed');
    }
  });

  it('when a PKCS#12 file is cut short anywhere, then keystore-malformed says it is truncated', () => {
    for (const length of [1, 2, 3, 4, 10, 100, 500, modern.length >> 1, modern.length - 1]) {
      const problem = problemOf(() =>
        parseKeystore({ data: modern.subarray(0, length), password: 'pw' }),
      );
      expect(problem).toMatchObject({ code: 'keystore_malformed' });
      expect(problem.message).toMatch(/^input is truncated/);
    }
    expect(problemOf(() => parseKeystore({ data: modern.subarray(0, 100) })).message).toBe(
      `input is truncated: the outer DER SEQUENCE declares ${modern.length} bytes but only 100 are present`,
    );
  });

  it('when the file is base64 text instead of binary, then keystore-malformed says so', () => {
    const problem = problemOf(() =>
      parseKeystore({ data: Buffer.from(modern.toString('base64')), password: 'pw' }),
    );
    expect(problem).toMatchObject({ code: 'keystore_malformed' });
    expect(problem.message).toMatch(/^input is base64 text without PEM boundaries/);
  });

  it('when the file is a DER certificate, then keystore-malformed says it is a certificate', () => {
    const problem = problemOf(() => parseKeystore({ data: certDer(fx, 'rsa.crt') }));
    expect(problem.message).toBe(
      'input is a DER X.509 certificate, not a PKCS#12 file: it holds no private key',
    );
  });

  it('when the file is a DER PKCS#8 key, then keystore-malformed says to send it as PEM', () => {
    const der = fx.openssl('pkcs8', '-topk8', '-nocrypt', '-in', 'p256.key', '-outform', 'DER');
    expect(problemOf(() => parseKeystore({ data: der })).message).toMatch(
      /DER PKCS#8 private key.*send it as PEM/,
    );
  });

  it('when bytes of real PKCS#12 files are mutated, then every failure is a keystore problem below 500', () => {
    const next = prng(2024);
    const seen = new Map<string, number>();
    for (let i = 0; i < 600; i++) {
      const base = fuzzBases[i % fuzzBases.length];
      const data = Buffer.from(base);
      const flips = 1 + Math.floor(next() * 4);
      for (let f = 0; f < flips; f++)
        data[Math.floor(next() * data.length)] = Math.floor(next() * 256);
      let code = 'imported';
      try {
        parseKeystore({ data, password: 'pw' });
      } catch (err) {
        if (!isKeystoreProblem(err))
          throw new Error(`mutation ${i} escaped as a raw ${String(err)}`, { cause: err });
        expect(err.status).toBeLessThan(500);
        code = err.code;
      }
      seen.set(code, (seen.get(code) ?? 0) + 1);
    }
    // The mutations reach past the outer structure: several kinds of answer occur.
    expect(seen.get('keystore_malformed')).toBeGreaterThan(0);
    expect(seen.get('keystore_password_invalid')).toBeGreaterThan(0);
    expect(seen.size).toBeGreaterThanOrEqual(3);
  });

  it('when bytes of an encrypted PKCS#8 PEM key are mutated, then every failure is a keystore problem below 500', () => {
    fx.openssl(
      'pkcs8',
      '-topk8',
      '-in',
      'p256.key',
      '-iter',
      '1',
      '-passout',
      'pass:pw',
      '-out',
      'fuzz-pkcs8.pem',
    );
    fx.openssl(
      'pkcs8',
      '-topk8',
      '-in',
      'rsa.key',
      '-v1',
      'PBE-SHA1-3DES',
      '-iter',
      '1',
      '-passout',
      'pass:pw',
      '-out',
      'fuzz-pkcs8-v1.pem',
    );
    const bases = ['fuzz-pkcs8.pem', 'fuzz-pkcs8-v1.pem'].map((f) =>
      Buffer.from(
        fx
          .read(f)
          .toString()
          .replace(/-----[^-]+-----|\s/g, ''),
        'base64',
      ),
    );
    const next = prng(77);
    const codes = new Set<string>();
    for (let i = 0; i < 400; i++) {
      const der = Buffer.from(bases[i % bases.length]);
      der[Math.floor(next() * der.length)] = Math.floor(next() * 256);
      const pem = `-----BEGIN ENCRYPTED PRIVATE KEY-----\n${der.toString('base64')}\n-----END ENCRYPTED PRIVATE KEY-----\n`;
      try {
        parseKeystore({ data: Buffer.from(pem), password: 'pw' });
        codes.add('imported');
      } catch (err) {
        if (!isKeystoreProblem(err))
          throw new Error(`mutation ${i} escaped as a raw ${String(err)}`, { cause: err });
        expect(err.status).toBeLessThan(500);
        codes.add(err.code);
      }
    }
    expect([...codes]).toEqual(
      expect.arrayContaining(['keystore_malformed', 'keystore_password_invalid']),
    );
  });
});
