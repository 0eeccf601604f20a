import { generateKeyPairSync } from 'node:crypto';
import { keyTypeOf } from '../../../shared/keystore/index.ts';
import { checkKeyPair } from '../../../shared/keystore/consistency.ts';
import {
  KDF_IV,
  KDF_KEY,
  KDF_MAC,
  WorkBudget,
  bmpPassword,
  pkcs12Kdf,
} from '../../../shared/keystore/pkcs12-kdf.ts';
import {
  rc2CbcDecrypt,
  rc2DecryptBlock,
  rc2EncryptBlock,
  rc2ExpandKey,
} from '../../../shared/keystore/rc2.ts';
import { fixtureDir, problemOf } from './fixtures.ts';

const fx = fixtureDir();
afterAll(() => fx.cleanup());

describe('RC2 (RFC 2268)', () => {
  // RFC 2268 section 5: key, effective key bits, plaintext, ciphertext.
  const VECTORS: [string, number, string, string][] = [
    ['0000000000000000', 63, '0000000000000000', 'ebb773f993278eff'],
    ['ffffffffffffffff', 64, 'ffffffffffffffff', '278b27e42e2f0d49'],
    ['3000000000000000', 64, '1000000000000001', '30649edf9be7d2c2'],
    ['88', 64, '0000000000000000', '61a8a244adacccf0'],
    ['88bca90e90875a', 64, '0000000000000000', '6ccf4308974c267f'],
    ['88bca90e90875a7f0f79c384627bafb2', 64, '0000000000000000', '1a807d272bbe5db1'],
    ['88bca90e90875a7f0f79c384627bafb2', 128, '0000000000000000', '2269552ab0f85ca6'],
    [
      '88bca90e90875a7f0f79c384627bafb216f80a6f85920584c42fceb0be255daf1e',
      129,
      '0000000000000000',
      '5b78d3a43dfff1f1',
    ],
  ];

  it.each(VECTORS)(
    'when key %s with %i effective bits encrypts %s, then the RFC test vector %s comes out, and back',
    (key, bits, plain, cipher) => {
      const K = rc2ExpandKey(Buffer.from(key, 'hex'), bits);
      expect(Buffer.from(rc2EncryptBlock(K, Buffer.from(plain, 'hex'))).toString('hex')).toBe(
        cipher,
      );
      expect(Buffer.from(rc2DecryptBlock(K, Buffer.from(cipher, 'hex'))).toString('hex')).toBe(
        plain,
      );
    },
  );

  it.each([
    ['rc2-40-cbc', '0102030405', 40],
    ['rc2-cbc', '000102030405060708090a0b0c0d0e0f', 128],
  ])(
    'when OpenSSL encrypts with %s, then rc2CbcDecrypt gives the plaintext back',
    (cipher, key, bits) => {
      const plain = 'RC2 is what -legacy PKCS#12 files still use for their certificates.';
      const iv = '0011223344556677';
      fx.write(`rc2-${bits}.txt`, plain);
      const sealed = fx.openssl(
        'enc',
        `-${cipher}`,
        '-provider',
        'legacy',
        '-provider',
        'default',
        '-K',
        key,
        '-iv',
        iv,
        '-in',
        `rc2-${bits}.txt`,
      );
      const out = rc2CbcDecrypt(
        Buffer.from(key, 'hex'),
        bits as number,
        Buffer.from(iv, 'hex'),
        sealed,
      );
      expect(out?.toString()).toBe(plain);
    },
  );

  it('when the padding is wrong (a wrong key), then rc2CbcDecrypt answers undefined instead of garbage', () => {
    const sealed = Buffer.from('8a3f0c1d2e4b5a69', 'hex');
    const results = Array.from({ length: 20 }, (_, i) =>
      rc2CbcDecrypt(Buffer.from([i, 1, 2, 3, 4]), 40, Buffer.alloc(8), sealed),
    );
    expect(results.filter((r) => r === undefined).length).toBeGreaterThanOrEqual(17);
    expect(rc2CbcDecrypt(Buffer.alloc(5), 40, Buffer.alloc(8), Buffer.alloc(7))).toBeUndefined();
  });
});

describe('the PKCS#12 KDF (RFC 7292 appendix B)', () => {
  it('when the password is given, then it becomes a BMPString with a two-byte terminator', () => {
    expect(bmpPassword('a€').toString('hex')).toBe('006120ac0000');
    expect(bmpPassword('').toString('hex')).toBe('0000');
    expect(bmpPassword('smeg').toString('hex')).toBe('0073006d006500670000');
  });

  it('when it derives the classic "smeg" key, then it matches the published vector', () => {
    const key = pkcs12Kdf(
      'sha1',
      bmpPassword('smeg'),
      Buffer.from('0A58CF64530D823F', 'hex'),
      KDF_KEY,
      1,
      24,
      new WorkBudget(),
    );
    expect(key.toString('hex').toUpperCase()).toBe(
      '8AAAE6297B6CB04642AB5B077851284EB7128F1A2A7FBCA3',
    );
  });

  it.each([
    ['sha1', KDF_KEY, 1000, 24],
    ['sha1', KDF_IV, 2048, 8],
    ['sha256', KDF_MAC, 2048, 32],
    ['sha256', KDF_KEY, 7, 100],
    ['sha384', KDF_MAC, 300, 48],
    ['sha512', KDF_IV, 1000, 150],
  ])(
    'when it derives with %s, id %i, %i iterations, %i bytes, then OpenSSL derives the same',
    (hash, id, iter, n) => {
      const password = bmpPassword('pässwörd-€');
      const salt = Buffer.from('a1b2c3d4e5f60718293a', 'hex');
      const ours = pkcs12Kdf(
        hash as string,
        password,
        salt,
        id as number,
        iter as number,
        n as number,
        new WorkBudget(),
      );
      const theirs = fx.openssl(
        'kdf',
        '-keylen',
        String(n),
        '-kdfopt',
        `digest:${hash}`,
        '-kdfopt',
        `hexpass:${password.toString('hex')}`,
        '-kdfopt',
        `hexsalt:${salt.toString('hex')}`,
        '-kdfopt',
        `id:${id}`,
        '-kdfopt',
        `iter:${iter}`,
        '-binary',
        'PKCS12KDF',
      );
      expect(ours).toEqual(theirs);
    },
  );

  it('when the work budget would be exceeded, then keystore-malformed and nothing is derived', () => {
    const budget = new WorkBudget(50_000);
    pkcs12Kdf('sha1', bmpPassword('x'), Buffer.alloc(8), KDF_MAC, 2048, 20, budget);
    expect(budget.remaining).toBe(50_000 - 20_480);
    const problem = problemOf(() =>
      pkcs12Kdf('sha1', bmpPassword('x'), Buffer.alloc(8), KDF_MAC, 2048, 40, budget),
    );
    expect(problem).toMatchObject({ code: 'keystore_malformed', status: 400 });
    expect(budget.remaining).toBe(50_000 - 20_480);
  });

  it('when the iteration count is zero or negative, then keystore-malformed', () => {
    expect(problemOf(() => new WorkBudget().charge(0, 0)).message).toBe(
      'iteration count 0 is not a positive integer',
    );
    expect(problemOf(() => new WorkBudget().charge(-5, -5)).code).toBe('keystore_malformed');
  });
});

describe('keyTypeOf', () => {
  it.each([
    ['rsa', { modulusLength: 3072 }, 'rsa-3072'],
    ['ec', { namedCurve: 'P-521' }, 'ec-p521'],
    ['ec', { namedCurve: 'P-256' }, 'ec-p256'],
    ['ed25519', {}, 'ed25519'],
    ['x25519', {}, 'x25519'],
    ['x448', {}, 'x448'],
    ['ed448', {}, 'ed448'],
    ['rsa-pss', { modulusLength: 2048 }, 'rsa-pss-2048'],
    [
      'rsa-pss',
      { modulusLength: 3072, hashAlgorithm: 'sha384', mgf1HashAlgorithm: 'sha384', saltLength: 48 },
      'rsa-pss-3072',
    ],
  ])('when the key is %s %j, then its type is %s', (kind, options, type) => {
    const { privateKey, publicKey } = generateKeyPairSync(
      kind as 'rsa',
      options as { modulusLength: number },
    );
    expect(keyTypeOf(privateKey)).toBe(type);
    expect(keyTypeOf(publicKey)).toBe(type);
  });

  it.each([
    ['rsa', { modulusLength: 1024 }, 'RSA with a 1024-bit modulus'],
    ['ec', { namedCurve: 'secp256k1' }, 'EC on curve secp256k1'],
    ['rsa-pss', { modulusLength: 1024 }, 'RSASSA-PSS with a 1024-bit modulus'],
    [
      'rsa-pss',
      { modulusLength: 2048, hashAlgorithm: 'sha1', mgf1HashAlgorithm: 'sha1', saltLength: 20 },
      'an RSASSA-PSS key restricted to hash sha1, which no JOSE PS* algorithm can use',
    ],
    [
      'rsa-pss',
      { modulusLength: 2048, hashAlgorithm: 'sha256', mgf1HashAlgorithm: 'sha512', saltLength: 32 },
      'an RSASSA-PSS key with MGF1 over sha512 and hash sha256, which no JOSE PS* algorithm can use',
    ],
    [
      'rsa-pss',
      { modulusLength: 2048, hashAlgorithm: 'sha256', mgf1HashAlgorithm: 'sha256', saltLength: 64 },
      'an RSASSA-PSS key that needs a salt of at least 64 bytes, which no JOSE PS* algorithm can use',
    ],
  ])(
    'when the key is %s %j, then keystore-unsupported-algorithm names it',
    (kind, options, what) => {
      const { privateKey } = generateKeyPairSync(
        kind as 'rsa',
        options as { modulusLength: number },
      );
      const problem = problemOf(() => keyTypeOf(privateKey));
      expect(problem).toMatchObject({ code: 'keystore_unsupported_algorithm', status: 415 });
      expect(problem.message).toBe(
        `unsupported key: ${what} (supported: RSA and RSASSA-PSS 2048/3072/4096, EC P-256/P-384/P-521, Ed25519, Ed448, X25519, X448)`,
      );
    },
  );
});

describe('checkKeyPair for agreement keys', () => {
  it.each(['x25519', 'x448'] as const)(
    'when a %s private key meets its own and another public key, then only the other is keystore-key-invalid',
    (kind) => {
      const pair = generateKeyPairSync(kind as 'x25519');
      const other = generateKeyPairSync(kind as 'x25519');
      expect(() => checkKeyPair(pair.privateKey, pair.publicKey, 0)).not.toThrow();
      expect(problemOf(() => checkKeyPair(pair.privateKey, other.publicKey, 0))).toMatchObject({
        code: 'keystore_key_invalid',
      });
    },
  );
});
