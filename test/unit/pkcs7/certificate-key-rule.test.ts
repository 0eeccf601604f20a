/**
 * The key rule for certificates a message carries: what a verification costs decides, not the
 * import's rule for keys the tenant uses, so an archive's RSA-1024 and brainpool signers are still
 * verified while a huge exponent or modulus is refused before any check.
 */
import { createPublicKey, generateKeyPairSync, randomBytes } from 'node:crypto';
import { certificateKeyFault } from '../../../shared/pkcs7/signature-budget.ts';

function b64url(b: Buffer): string {
  return b.toString('base64url');
}

/** An RSA public key with an odd modulus of `bits` and an exponent of `eBits` bits (never used to verify). */
function rsaPublic(bits: number, eBits: number) {
  const n = randomBytes(bits / 8);
  n[0] |= 0x80;
  n[n.length - 1] |= 1;
  const e = randomBytes(Math.ceil(eBits / 8));
  e[0] = (e[0] & (0xff >> (e.length * 8 - eBits))) | (1 << ((eBits - 1) % 8));
  e[e.length - 1] |= 1;
  return createPublicKey({ key: { kty: 'RSA', n: b64url(n), e: b64url(e) }, format: 'jwk' });
}

describe('the key rule for carried and anchor certificates', () => {
  it('when an old archive signer holds RSA-1024, then it is verifiable (the import would refuse it)', () => {
    const { publicKey } = generateKeyPairSync('rsa', { modulusLength: 1024 });
    expect(certificateKeyFault(publicKey)).toBeNull();
  });

  it('when the signer holds a brainpool or NIST curve key or Ed25519, then it is verifiable', () => {
    for (const namedCurve of ['brainpoolP256r1', 'prime256v1', 'secp521r1'])
      expect(certificateKeyFault(generateKeyPairSync('ec', { namedCurve }).publicKey)).toBeNull();
    expect(certificateKeyFault(generateKeyPairSync('ed25519').publicKey)).toBeNull();
  });

  it('when the RSA key has 512 bits, then it is refused: such a verification proves nothing', () => {
    expect(certificateKeyFault(rsaPublic(512, 17))).toMatch(/512 bits/);
  });

  it('when the RSA key has a huge public exponent or modulus, then it is refused before any check', () => {
    expect(certificateKeyFault(rsaPublic(3072, 3071))).toMatch(/exponent has 3071 bits/);
    expect(certificateKeyFault(rsaPublic(16384, 17))).toMatch(/16384 bits/);
    expect(certificateKeyFault(rsaPublic(3072, 17))).toBeNull();
  });
});
