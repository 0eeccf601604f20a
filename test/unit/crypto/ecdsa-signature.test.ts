import { generateKeyPairSync, sign, verify } from 'node:crypto';
import { derToP1363 } from '../../../shared/crypto/ecdsa-signature.ts';

describe('derToP1363', () => {
  it.each([['P-256', 'sha256', 32], ['P-384', 'sha384', 48], ['P-521', 'sha512', 66]] as const)(
    'when OpenSSL signs with %s in DER, then the conversion is what Node itself produces as ieee-p1363 and verifies',
    (namedCurve, hash, size) => {
      const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve });
      // Enough signatures that r or s with a high bit (a DER sign byte) and short integers both occur.
      for (let i = 0; i < 200; i += 1) {
        const data = Buffer.from(`message ${i}`);
        const der = sign(hash, data, privateKey);
        const p1363 = derToP1363(der, size);
        expect(p1363.length).toBe(2 * size);
        expect(verify(hash, data, { key: publicKey, dsaEncoding: 'ieee-p1363' }, p1363)).toBe(true);
        expect(verify(hash, data, { key: publicKey, dsaEncoding: 'der' }, der)).toBe(true);
      }
    },
  );

  it('when the input is not a DER signature, then it throws instead of returning garbage', () => {
    expect(() => derToP1363(Buffer.from([0x04, 0x02, 0x02, 0x00]), 32)).toThrow('not a DER ECDSA signature');
    expect(() => derToP1363(Buffer.from([0x30, 0x06, 0x02, 0x40, 0x01, 0x02, 0x01, 0x01]), 32)).toThrow('larger than the curve');
  });
});
