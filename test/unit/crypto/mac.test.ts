import { createHmac } from 'node:crypto';
import { jest } from '@jest/globals';
import { keyOf, thrown } from './helpers.ts';
import { KEY_TYPE_SPECS } from '../../../shared/crypto/registry.ts';
import {
  generateKeyMaterialSync,
  loadKeyObjects,
  publicJwk,
  serializeMaterial,
  deserializeMaterial,
} from '../../../shared/crypto/material.ts';

// timingSafeEqual is wrapped so the test can count the comparisons verification makes; mac.ts is
// imported after the mock so it sees the wrapper.
const actual = await import('node:crypto');
const timingSafeEqual = jest.fn(actual.timingSafeEqual);
jest.unstable_mockModule('node:crypto', () => ({ ...actual, default: actual, timingSafeEqual }));
const { computeMac, macMatches } = await import('../../../shared/crypto/mac.ts');

describe('HMAC keys and MACs', () => {
  beforeEach(() => timingSafeEqual.mockClear());

  it.each([
    ['hmac-sha256', 32, 'HS256'],
    ['hmac-sha384', 48, 'HS384'],
    ['hmac-sha512', 64, 'HS512'],
  ] as const)(
    'when a %s key is generated, then it is a %i-byte secret that survives the at-rest codec and has no public JWK',
    (type, bytes, alg) => {
      const spec = KEY_TYPE_SPECS[type];
      expect(spec).toMatchObject({
        family: 'hmac',
        symmetric: true,
        usages: ['mac'],
        defaultUsage: 'mac',
        mac: { alg },
      });
      const m = generateKeyMaterialSync(type);
      expect(m.secret?.length).toBe(bytes);
      const back = deserializeMaterial(serializeMaterial(m));
      expect(back.secret).toEqual(m.secret);
      expect(loadKeyObjects(back).secretKey?.symmetricKeySize).toBe(bytes);
      expect(() => publicJwk(back)).toThrow(/no public key/);
    },
  );

  it('when a stored HMAC secret has the wrong length, then loading it fails instead of using a weaker key', async () => {
    const m = generateKeyMaterialSync('hmac-sha384');
    expect(
      (await thrown(() => loadKeyObjects({ ...m, secret: m.secret!.subarray(0, 32) }))).code,
    ).toBe('internal');
  });

  it("when a MAC is computed, then it is RFC 2104 HMAC with the type's hash", async () => {
    const key = await keyOf('hmac-sha384', 'mac');
    const data = Buffer.from('attack at dawn');
    expect(computeMac(key, data)).toEqual(
      createHmac('sha384', key.secretKey!).update(data).digest(),
    );
  });

  it('when a MAC is verified, then exactly one constant-time compare runs, over two full-length values', async () => {
    const key = await keyOf('hmac-sha256', 'mac');
    const data = Buffer.from('attack at dawn');
    const mac = computeMac(key, data);
    expect(macMatches(key, data, mac)).toBe(true);
    const wrong = Buffer.from(mac);
    wrong[0] ^= 1;
    expect(macMatches(key, data, wrong)).toBe(false);
    expect(timingSafeEqual).toHaveBeenCalledTimes(2);
    for (const [a, b] of timingSafeEqual.mock.calls as unknown as Array<[Buffer, Buffer]>)
      expect([a.length, b.length]).toEqual([32, 32]);
  });

  it('when a MAC is truncated, then verification refuses it with 400 before any compare (a short MAC is easier to forge)', async () => {
    const key = await keyOf('hmac-sha512', 'mac');
    const data = Buffer.from('attack at dawn');
    const mac = computeMac(key, data);
    for (const short of [mac.subarray(0, 32), mac.subarray(0, 63), Buffer.alloc(0)]) {
      expect(await thrown(() => macMatches(key, data, short))).toMatchObject({
        code: 'validation_failed',
        status: 400,
      });
    }
    expect(timingSafeEqual).not.toHaveBeenCalled();
  });

  it('when a key of another usage computes a MAC, then key-usage-mismatch', async () => {
    const key = await keyOf('aes-256', 'encrypt');
    expect((await thrown(() => computeMac(key, Buffer.from('x')))).code).toBe('key_usage_mismatch');
  });
});
