import {
  createHash,
  createPublicKey,
  decapsulate as nodeDecapsulate,
  diffieHellman,
  encapsulate as nodeEncapsulate,
  randomBytes,
} from 'node:crypto';
import { readFileSync } from 'node:fs';
import { decapsulate, encapsulate, hybridPublicKey } from '../../../shared/crypto/pqc.ts';
import {
  hybridMaterialFromSeed,
  loadKeyObjects,
  loadKeyVersion,
} from '../../../shared/crypto/material.ts';
import { flipBit, keyOf, thrown } from './helpers.ts';
import { XWING_VECTOR_1 } from './xwing-vectors.ts';
import { kemDecap } from '../../support/independent-hpke.ts';

/**
 * The MLKEM768-P256 (0x0050) and MLKEM1024-P384 (0x0051) vectors of draft-ietf-hpke-pq
 * (github.com/hpkewg/hpke-pq test-vectors.json at commit 74dafaa, the KEM fields only): skRm is
 * the 32-byte hybrid seed, pkRm its encapsulation key, enc a ciphertext and shared_secret its secret.
 */
const NIST_VECTORS = (
  JSON.parse(
    readFileSync(new URL('../../fixtures/pq/hpke-pq-hybrid-vectors.json', import.meta.url), 'utf8'),
  ) as {
    kem_id: number;
    kdf_id: number;
    skRm: string;
    pkRm: string;
    enc: string;
    shared_secret: string;
  }[]
).map((v) => ({
  ...v,
  type: v.kem_id === 0x0050 ? ('p256-ml-kem-768' as const) : ('p384-ml-kem-1024' as const),
}));

describe('key encapsulation', () => {
  it.each([
    ['ml-kem-768', 1088],
    ['ml-kem-1024', 1568],
    ['x25519-ml-kem-768', 1120],
    ['p256-ml-kem-768', 1153],
    ['p384-ml-kem-1024', 1665],
  ] as const)(
    'when a %s key encapsulates, then the %i-byte ciphertext decapsulates to the same 32-byte secret',
    async (type, ctLength) => {
      const key = await keyOf(type, 'encrypt');
      const { ciphertext, sharedSecret } = encapsulate(key);
      expect(ciphertext).toHaveLength(ctLength);
      expect(sharedSecret).toHaveLength(32);
      expect(decapsulate(key, ciphertext).equals(sharedSecret)).toBe(true);
      expect(encapsulate(key).sharedSecret.equals(sharedSecret)).toBe(false);
    },
  );

  it('when an ML-KEM ciphertext is altered, then decapsulation still answers, with an unrelated secret (implicit rejection)', async () => {
    const key = await keyOf('ml-kem-768', 'encrypt');
    const { ciphertext, sharedSecret } = encapsulate(key);
    const other = decapsulate(key, flipBit(ciphertext));
    expect(other).toHaveLength(32);
    expect(other.equals(sharedSecret)).toBe(false);
  });

  it('when Node encapsulates to our ML-KEM public key directly, then we decapsulate the same secret', async () => {
    const key = await keyOf('ml-kem-1024', 'encrypt');
    const { ciphertext, sharedKey } = nodeEncapsulate(key.publicKey!);
    expect(decapsulate(key, ciphertext).equals(sharedKey)).toBe(true);
  });

  it('when a ciphertext has the wrong length, then 400 validation_failed', async () => {
    for (const type of [
      'ml-kem-768',
      'ml-kem-1024',
      'x25519-ml-kem-768',
      'p256-ml-kem-768',
      'p384-ml-kem-1024',
    ] as const) {
      const key = await keyOf(type, 'encrypt');
      expect(await thrown(() => decapsulate(key, Buffer.alloc(100)))).toMatchObject({
        code: 'validation_failed',
        status: 400,
      });
    }
  });

  it('when a key that is not a KEM is asked to encapsulate, then 422 key_usage_mismatch', async () => {
    const ec = await keyOf('ec-p256', 'encrypt');
    expect(await thrown(() => encapsulate(ec))).toMatchObject({
      code: 'key_usage_mismatch',
      status: 422,
    });
    const dsa = await keyOf('ml-dsa-44', 'sign');
    expect(await thrown(() => decapsulate(dsa, Buffer.alloc(1088)))).toMatchObject({
      code: 'key_usage_mismatch',
    });
  });

  it('when only the public half of a KEM key is held, then it encapsulates and decapsulation is 422', async () => {
    const full = await keyOf('ml-kem-768', 'encrypt');
    const publicOnly = loadKeyVersion(
      { type: 'ml-kem-768', publicKeyDer: full.publicKey!.export({ type: 'spki', format: 'der' }) },
      { kid: 'pub', version: 1, usage: 'encrypt' },
    );
    const { ciphertext, sharedSecret } = encapsulate(publicOnly);
    expect(decapsulate(full, ciphertext).equals(sharedSecret)).toBe(true);
    expect(await thrown(() => decapsulate(publicOnly, ciphertext))).toMatchObject({
      code: 'key_usage_mismatch',
    });
  });
});

describe('the X25519 + ML-KEM-768 hybrid (X-Wing)', () => {
  it('when the draft test vector seed is expanded, then the encapsulation key and the decapsulated secret match the vector', () => {
    const key = loadKeyObjects(hybridMaterialFromSeed('x25519-ml-kem-768', XWING_VECTOR_1.sk));
    expect(hybridPublicKey(key).equals(XWING_VECTOR_1.pk)).toBe(true);
    expect(decapsulate(key, XWING_VECTOR_1.ct).equals(XWING_VECTOR_1.ss)).toBe(true);
  });

  it('when the secret is recomputed by hand from the two component secrets, then it is SHA3-256(ss_M || ss_X || ct_X || pk_X || label)', async () => {
    const key = await keyOf('x25519-ml-kem-768', 'encrypt');
    const { ciphertext, sharedSecret } = encapsulate(key);
    const [m, x] = key.components!;
    const ssM = nodeDecapsulate(m.privateKey!, ciphertext.subarray(0, 1088));
    const ctX = ciphertext.subarray(1088);
    const ssX = diffieHellman({
      privateKey: x.privateKey!,
      publicKey: createPublicKey({ key: ctX, format: 'raw-public', asymmetricKeyType: 'x25519' }),
    });
    const pkX = x.publicKey.export({ format: 'raw-public' });
    const expected = createHash('sha3-256')
      .update(Buffer.concat([ssM, ssX, ctX, pkX, Buffer.from('\\.//^\\', 'ascii')]))
      .digest();
    expect(sharedSecret.equals(expected)).toBe(true);
  });

  it('when either half of the hybrid ciphertext is altered, then the secret changes', async () => {
    const key = await keyOf('x25519-ml-kem-768', 'encrypt');
    const { ciphertext, sharedSecret } = encapsulate(key);
    expect(decapsulate(key, flipBit(ciphertext, 10)).equals(sharedSecret)).toBe(false);
    expect(decapsulate(key, flipBit(ciphertext, 1100)).equals(sharedSecret)).toBe(false);
  });

  it('when the X25519 share is a low-order point, then decapsulation is the opaque decryption_failed', async () => {
    const key = await keyOf('x25519-ml-kem-768', 'encrypt');
    const { ciphertext } = encapsulate(key);
    const lowOrder = Buffer.concat([ciphertext.subarray(0, 1088), Buffer.alloc(32)]);
    expect(await thrown(() => decapsulate(key, lowOrder))).toMatchObject({
      code: 'decryption_failed',
    });
  });

  it('when the same seed is expanded twice, then the same key results and the seed is kept as the X-Wing private key', () => {
    const seed = randomBytes(32);
    const a = hybridMaterialFromSeed('x25519-ml-kem-768', seed);
    const b = hybridMaterialFromSeed('x25519-ml-kem-768', Buffer.from(seed));
    expect(a.components!.map((c) => c.publicKeyDer.toString('hex'))).toEqual(
      b.components!.map((c) => c.publicKeyDer.toString('hex')),
    );
    expect(a.secret!.equals(seed)).toBe(true);
  });
});

describe('the ML-KEM + P-256 / P-384 hybrids (MLKEM768-P256, MLKEM1024-P384)', () => {
  it('holds a vector of each KEM', () => {
    expect(new Set(NIST_VECTORS.map((v) => v.kem_id))).toEqual(new Set([0x0050, 0x0051]));
  });

  it.each(NIST_VECTORS.map((v) => [v.type, v.kdf_id, v] as const))(
    'when the %s vector seed (suite with KDF %i) is expanded, then the encapsulation key is pkRm byte for byte and enc decapsulates to shared_secret',
    async (type, _kdf, v) => {
      const key = loadKeyObjects(hybridMaterialFromSeed(type, Buffer.from(v.skRm, 'hex')));
      expect(hybridPublicKey(key).toString('hex')).toBe(v.pkRm);
      expect(decapsulate(key, Buffer.from(v.enc, 'hex')).toString('hex')).toBe(v.shared_secret);
      // The independent decapsulation (BigInt curve arithmetic, @hpke/ml-kem, noble SHA-3) agrees.
      const independent = await kemDecap(
        v.kem_id,
        Buffer.from(v.skRm, 'hex'),
        Buffer.from(v.enc, 'hex'),
      );
      expect(independent.toString('hex')).toBe(v.shared_secret);
    },
  );

  it.each([
    ['p256-ml-kem-768', 0x0050, 1088, 65],
    ['p384-ml-kem-1024', 0x0051, 1568, 97],
  ] as const)(
    'when a %s key encapsulates, then the independent decapsulation finds the same secret and the group share is an uncompressed point',
    async (type, kemId, ctM, elem) => {
      const seed = randomBytes(32);
      const key = loadKeyObjects(hybridMaterialFromSeed(type, seed));
      const { ciphertext, sharedSecret } = encapsulate(key);
      expect(ciphertext).toHaveLength(ctM + elem);
      expect(ciphertext[ctM]).toBe(0x04);
      expect((await kemDecap(kemId, seed, ciphertext)).equals(sharedSecret)).toBe(true);
    },
  );

  it.each([
    ['p256-ml-kem-768', 1088],
    ['p384-ml-kem-1024', 1568],
  ] as const)(
    'when the %s group share is not a point of the curve, or not in uncompressed form, then decapsulation is the opaque decryption_failed',
    async (type, ctM) => {
      const key = await keyOf(type, 'encrypt');
      const { ciphertext } = encapsulate(key);
      const offCurve = Buffer.from(ciphertext);
      offCurve[offCurve.length - 1] ^= 1;
      expect(await thrown(() => decapsulate(key, offCurve))).toMatchObject({
        code: 'decryption_failed',
      });
      const hybridForm = Buffer.from(ciphertext);
      hybridForm[ctM] = 0x06 | (ciphertext[ciphertext.length - 1] & 1);
      expect(await thrown(() => decapsulate(key, hybridForm))).toMatchObject({
        code: 'decryption_failed',
      });
    },
  );

  it('when the same seed is expanded twice, then the same key results and the seed is kept as the private key', () => {
    const seed = randomBytes(32);
    const a = hybridMaterialFromSeed('p384-ml-kem-1024', seed);
    const b = hybridMaterialFromSeed('p384-ml-kem-1024', Buffer.from(seed));
    expect(a.components!.map((c) => c.publicKeyDer.toString('hex'))).toEqual(
      b.components!.map((c) => c.publicKeyDer.toString('hex')),
    );
    expect(a.secret!.equals(seed)).toBe(true);
  });
});
