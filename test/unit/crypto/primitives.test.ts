import { constants, createHash, generateKeyPairSync, privateEncrypt, sign } from 'node:crypto';
import { aesKeyUnwrap, aesKeyWrap } from '../../../shared/crypto/aes-kw.ts';
import { ecdsaVerifyDigest } from '../../../shared/crypto/ecdsa-digest.ts';
import { derToP1363 } from '../../../shared/crypto/ecdsa-signature.ts';
import { concatKdf, x963Kdf } from '../../../shared/crypto/kdf.ts';
import { pkcs1VerifyDigest, pssVerifyDigest } from '../../../shared/crypto/rsa-digest.ts';

const hex = (s: string): Buffer => Buffer.from(s.replace(/\s/g, ''), 'hex');
const KEK = hex('000102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F');

describe('AES key wrap, the one copy for JOSE and CMS (RFC 3394)', () => {
  it.each([
    [
      '4.1: 128 bits of key data, 128-bit KEK',
      16,
      '00112233445566778899AABBCCDDEEFF',
      '1FA68B0A8112B447 AEF34BD8FB5A7B82 9D3E862371D2CFE5',
    ],
    [
      '4.2: 128 bits of key data, 192-bit KEK',
      24,
      '00112233445566778899AABBCCDDEEFF',
      '96778B25AE6CA435 F92B5B97C050AED2 468AB8A17AD84E5D',
    ],
    [
      '4.3: 128 bits of key data, 256-bit KEK',
      32,
      '00112233445566778899AABBCCDDEEFF',
      '64E8C3F9CE0F5BA2 63E9777905818A2A 93C8191E7D6E8AE7',
    ],
    [
      '4.6: 256 bits of key data, 256-bit KEK',
      32,
      '00112233445566778899AABBCCDDEEFF000102030405060708090A0B0C0D0E0F',
      '28C9F404C4B810F4 CBCCB35CFB87F826 3F5786E2D80ED326 CBC7F0E71A99F43B FB988B9B7A02DD21',
    ],
  ])(
    'when section %s is wrapped, then the output is the RFC vector and unwraps back',
    (_, kekBytes, key, wrapped) => {
      const kek = KEK.subarray(0, kekBytes);
      expect(aesKeyWrap(kek, hex(key))).toEqual(hex(wrapped));
      expect(aesKeyUnwrap(kek, hex(wrapped))).toEqual(hex(key));
    },
  );

  it('when one bit of the wrapped key changes, then the integrity check refuses it', () => {
    const wrapped = hex('1FA68B0A8112B447 AEF34BD8FB5A7B82 9D3E862371D2CFE5');
    wrapped[23] ^= 1;
    expect(() => aesKeyUnwrap(KEK.subarray(0, 16), wrapped)).toThrow();
  });

  // Regression: OpenSSL unwraps an empty input to an empty key without an integrity check; the
  // copies this one replaced passed that through, and only a later length check caught it.
  it.each([
    ['empty', 0],
    ['one block', 8],
    ['two blocks (one block of key data, below the RFC minimum)', 16],
    ['not a whole number of blocks', 25],
  ])('when the wrapped key is %s, then it is refused before OpenSSL sees it', (_, n) => {
    expect(() => aesKeyUnwrap(KEK.subarray(0, 16), Buffer.alloc(n))).toThrow(/64-bit blocks/);
  });

  it('when the KEK is not 16, 24 or 32 bytes, then wrap and unwrap refuse it', () => {
    expect(() => aesKeyWrap(Buffer.alloc(20), Buffer.alloc(16))).toThrow(/16, 24 or 32 bytes/);
    expect(() => aesKeyUnwrap(Buffer.alloc(20), Buffer.alloc(24))).toThrow(/16, 24 or 32 bytes/);
  });
});

describe('the KDFs', () => {
  it('when Concat KDF runs on RFC 7518 appendix C, then it derives the appendix key', () => {
    const z = Buffer.from([
      158, 86, 217, 29, 129, 113, 53, 211, 114, 131, 66, 131, 191, 132, 38, 156, 251, 49, 110, 163,
      218, 128, 106, 72, 246, 218, 167, 121, 140, 254, 144, 196,
    ]);
    const key = concatKdf(z, 128, 'A128GCM', Buffer.from('Alice'), Buffer.from('Bob'));
    expect(key.toString('base64url')).toBe('VqqN6vgjbSBcIijNcacQGg');
  });

  it('when Concat KDF needs more than one SHA-256 block, then the blocks follow the counter', () => {
    const z = Buffer.alloc(32, 7);
    const long = concatKdf(z, 512, 'X');
    expect(long.length).toBe(64);
    expect(concatKdf(z, 256, 'X')).not.toEqual(long.subarray(0, 32)); // keydatalen is in OtherInfo
  });

  it('when the X9.63 KDF runs on the pyca/cryptography SHA-256 vector, then it derives its key (OpenSSL X963KDF agrees)', () => {
    expect(
      x963Kdf(
        'sha256',
        hex('96c05619d56c328ab95fe84b18264b08725b85e33fd34f08'),
        Buffer.alloc(0),
        16,
      ),
    ).toEqual(hex('443024c3dae66b95e6f5670601558f71'));
    expect(
      x963Kdf(
        'sha256',
        hex('96c05619d56c328ab95fe84b18264b08725b85e33fd34f08'),
        hex('deadbeef'),
        32,
      ),
    ).toEqual(hex('4A91EA9C297B69FF42858369D01A40480254998A37A3EF7608DACDD6D34859E8'));
  });
});

describe('RSA verification over a digest, the one copy for the KMS and the CMS engine', () => {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const data = Buffer.from('the content');

  it.each(['sha1', 'sha224', 'sha256', 'sha384', 'sha512'] as const)(
    'when OpenSSL signs with PKCS#1 v1.5 and %s, then the digest verifies',
    (hash) => {
      const sig = sign(hash, data, privateKey);
      expect(pkcs1VerifyDigest(publicKey, hash, createHash(hash).update(data).digest(), sig)).toBe(
        true,
      );
    },
  );

  // The CMS copy parsed the DigestInfo leniently; encode-and-compare (as OpenSSL verifies) won.
  it('when the DigestInfo leaves out the NULL parameters, then it does not verify', () => {
    const digest = createHash('sha256').update(data).digest();
    const noNull = Buffer.concat([hex('302f300b0609608648016503040201 0420'), digest]);
    const sig = privateEncrypt({ key: privateKey, padding: constants.RSA_PKCS1_PADDING }, noNull);
    expect(pkcs1VerifyDigest(publicKey, 'sha256', digest, sig)).toBe(false);
  });

  it.each([20, 32, 0])(
    'when OpenSSL signs with PSS and a salt of %i bytes, then the digest verifies with that salt length only',
    (saltLength) => {
      const sig = sign('sha256', data, {
        key: privateKey,
        padding: constants.RSA_PKCS1_PSS_PADDING,
        saltLength,
      });
      const digest = createHash('sha256').update(data).digest();
      expect(pssVerifyDigest(publicKey, 'sha256', digest, sig, saltLength)).toBe(true);
      expect(pssVerifyDigest(publicKey, 'sha256', digest, sig, saltLength + 1)).toBe(false);
    },
  );

  // The CMS copy did not check the signature's length (RFC 8017 section 8.1.2 step 1).
  it('when a PSS signature is one byte short, then it does not verify', () => {
    const sig = sign('sha256', data, {
      key: privateKey,
      padding: constants.RSA_PKCS1_PSS_PADDING,
      saltLength: 32,
    });
    const digest = createHash('sha256').update(data).digest();
    expect(pssVerifyDigest(publicKey, 'sha256', digest, sig.subarray(1))).toBe(false);
  });
});

describe('ECDSA verification over a digest, the one copy for the KMS and the CMS engine', () => {
  it.each([
    ['P-256', 'sha256', 32],
    ['P-384', 'sha384', 48],
    ['P-521', 'sha512', 66],
    ['P-256', 'sha1', 32],
    ['P-521', 'sha256', 66],
  ] as const)(
    'when OpenSSL signs on %s with %s, then the DER signature converted verifies over the digest',
    (crv, hash, size) => {
      const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: crv });
      const data = Buffer.from(`content for ${crv}`);
      const digest = createHash(hash).update(data).digest();
      const sig = derToP1363(sign(hash, data, privateKey), size);
      expect(ecdsaVerifyDigest(publicKey, crv, digest, sig)).toBe(true);
      digest[0] ^= 1;
      expect(ecdsaVerifyDigest(publicKey, crv, digest, sig)).toBe(false);
    },
  );
});
