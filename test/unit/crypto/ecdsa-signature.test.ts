import { generateKeyPairSync, sign, verify } from 'node:crypto';
import { derToP1363 } from '../../../shared/crypto/ecdsa-signature.ts';

describe('derToP1363', () => {
  it.each([
    ['P-256', 'sha256', 32],
    ['P-384', 'sha384', 48],
    ['P-521', 'sha512', 66],
  ] as const)(
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
    expect(() => derToP1363(Buffer.from([0x04, 0x02, 0x02, 0x00]), 32)).toThrow(
      'not a DER ECDSA signature',
    );
    const wide = Buffer.concat([
      Buffer.from([0x30, 38, 0x02, 33, 0x01]),
      Buffer.alloc(32, 0x11),
      Buffer.from([0x02, 0x01, 0x01]),
    ]);
    expect(() => derToP1363(wide, 32)).toThrow('larger than the curve');
  });

  // One signature has one encoding (CVE-2014-8275): the CMS engine reads signatures from untrusted
  // messages through this function, where the copy it replaced accepted all of these.
  it.each([
    ['a negative r (high bit without the sign byte)', '3006020180020101'],
    ['a redundant leading zero', '300702020001020101'],
    ['an empty INTEGER', '30050200020101'],
    ['bytes after the SEQUENCE', '300602010102010100'],
    ['a SEQUENCE length longer than the input', '3007020101020101'],
    ['a long-form length that the short form could hold', '308106020101020101'],
    ['a third INTEGER', '3009020101020101020101'],
  ])('when the DER has %s, then it is refused', (_, hex) => {
    expect(() => derToP1363(Buffer.from(hex, 'hex'), 32)).toThrow('not a DER ECDSA signature');
  });
});
