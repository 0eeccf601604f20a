import { randomBytes } from 'node:crypto';
import { compactDecrypt, CompactEncrypt, importJWK, type JWK } from 'jose';
import { blobBase64, blobOf, fromBlob, toBlob } from '../../../shared/jose/ciphertext-blob.ts';
import { encryptCompact, encryptParts } from '../../../shared/jose/compact-jwe.ts';
import { keyOf } from '../crypto/helpers.ts';

const b64u = (n: number) => randomBytes(n).toString('base64url');
/** A compact JWE of the given part sizes (bytes; the header is text). */
const shaped = (ek: number, iv: number, ct: number, tag: number) =>
  `${b64u(40)}.${b64u(ek)}.${b64u(iv)}.${b64u(ct)}.${b64u(tag)}`;
const textForm = (jwe: string) =>
  Buffer.concat([Buffer.from('KWC\x01', 'latin1'), Buffer.from(jwe)]);

describe('the ciphertext blob', () => {
  it.each([
    ['dir (no encrypted key)', 0, 12, 1024, 16],
    ['RSA-OAEP-256 (a 512-byte encrypted key)', 512, 12, 33, 16],
    ['ECDH-ES+A256KW', 40, 12, 1, 16],
    ['HPKE integrated (no IV, no tag, an ML-KEM-1024 encapsulation)', 1568, 0, 300, 0],
    ['an empty plaintext', 0, 12, 0, 16],
  ])(
    'when a %s JWE is written as a blob and read back, then the same JWE comes out',
    (_n, ek, iv, ct, tag) => {
      const jwe = shaped(ek, iv, ct, tag);
      const blob = toBlob(jwe);
      expect(blob.subarray(0, 4).toString('latin1')).toBe('KWC\x02');
      expect(fromBlob(blob)).toBe(jwe);
    },
  );

  it('when a JWE of this service is carried as a blob, then jose decrypts what comes back', async () => {
    const key = await keyOf('aes-256', 'encrypt');
    const jwe = encryptCompact(key, Buffer.from('the plaintext'), {});
    const back = fromBlob(Buffer.from(blobBase64(jwe), 'base64'))!;
    const { plaintext } = await compactDecrypt(back, new Uint8Array(key.secretKey!.export()));
    expect(Buffer.from(plaintext).toString()).toBe('the plaintext');
  });

  it.each(['aes-256', 'rsa-2048', 'ec-p256'] as const)(
    'when a %s key seals straight to a blob, then jose decrypts the JWE read back',
    async (type) => {
      const key = await keyOf(type, 'encrypt');
      const back = fromBlob(blobOf(encryptParts(key, Buffer.from('sealed'), {})))!;
      const joseKey = key.secretKey
        ? new Uint8Array(key.secretKey.export())
        : await importJWK(
            key.privateKey!.export({ format: 'jwk' }) as JWK,
            type === 'rsa-2048' ? 'RSA-OAEP-256' : 'ECDH-ES+A256KW',
          );
      const { plaintext } = await compactDecrypt(back, joseKey);
      expect(Buffer.from(plaintext).toString()).toBe('sealed');
    },
  );

  it('when a JWE written by jose is carried as a blob, then it comes back byte for byte', async () => {
    const jwe = await new CompactEncrypt(randomBytes(1000))
      .setProtectedHeader({ alg: 'dir', enc: 'A256GCM', kid: 'k#1' })
      .encrypt(randomBytes(32));
    expect(fromBlob(toBlob(jwe))).toBe(jwe);
  });

  it('when a blob of the text form (written before the binary one) is read, then its JWE comes out', () => {
    const jwe = shaped(0, 12, 100, 16);
    expect(fromBlob(textForm(jwe))).toBe(jwe);
  });

  it('when a 1 KiB plaintext is sealed, then the blob base64 is at most four fifths of the text form', async () => {
    const jwe = encryptCompact(await keyOf('aes-256', 'encrypt'), randomBytes(1024), {});
    const binary = blobBase64(jwe).length;
    const text = textForm(jwe).toString('base64').length;
    expect(binary / text).toBeLessThan(0.8);
  });

  it('when a blob is cut anywhere, then reading it never throws and never gives the JWE back', () => {
    const jwe = shaped(40, 12, 64, 16);
    const blob = toBlob(jwe);
    for (let n = 0; n < blob.length; n += 1) {
      const read = fromBlob(blob.subarray(0, n));
      expect(read).not.toBe(jwe);
    }
  });

  it.each([
    ['another magic', (b: Buffer) => (b[0] = 0x4a)],
    ['an unknown form', (b: Buffer) => (b[3] = 0x03)],
    ['an empty header', (b: Buffer) => b.writeUInt16BE(0, 4)],
    ['a header that is not base64url text', (b: Buffer) => (b[6] = 0x2e)],
    ['a header length past the end', (b: Buffer) => b.writeUInt16BE(0xffff, 4)],
  ])('when a blob has %s, then it reads as no blob', (_n, spoil) => {
    const blob = toBlob(shaped(0, 12, 64, 16));
    spoil(blob);
    expect(fromBlob(blob)).toBeNull();
  });

  it('when a string that is no compact JWE is written, then the writer refuses it', () => {
    expect(() => toBlob('a.b.c')).toThrow('five parts');
    expect(() => toBlob('eyJ.!!!!.a.b.c')).toThrow('base64url');
  });
});
