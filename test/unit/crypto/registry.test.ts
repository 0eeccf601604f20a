import { generateKeyPairSync } from 'node:crypto';
import type { KeyType } from '../../../shared/crypto/registry.ts';
import {
  KEY_TYPES,
  KEY_TYPE_SPECS,
  assertUsage,
  isKeyType,
  keyTypeSpec,
  resolveUsage,
  signatureAlgorithmSpec,
} from '../../../shared/crypto/registry.ts';
import { thrown } from './helpers.ts';

describe('the key-type registry', () => {
  it('when listed, then it holds every type of the contract, the twelve SLH-DSA variants and the hybrid', () => {
    for (const t of [
      'aes-128',
      'aes-256',
      'rsa-2048',
      'rsa-3072',
      'rsa-4096',
      'ec-p256',
      'ec-p384',
      'ec-p521',
      'ed25519',
      'ml-kem-768',
      'ml-kem-1024',
      'ml-dsa-44',
      'ml-dsa-65',
      'ml-dsa-87',
      'slh-dsa-sha2-128s',
      'slh-dsa-sha2-128f',
      'slh-dsa-shake-128f',
      'slh-dsa-shake-256s',
      'x25519-ml-kem-768',
      'p256-ml-kem-768',
      'p384-ml-kem-1024',
    ]) {
      expect(isKeyType(t)).toBe(true);
    }
    expect(KEY_TYPES.filter((t) => t.startsWith('slh-dsa-'))).toHaveLength(12);
    expect(Object.keys(KEY_TYPE_SPECS)).toEqual([...KEY_TYPES]);
  });

  it('when every row is read, then its usages contain its default usage and match its JOSE algorithms', () => {
    for (const t of KEY_TYPES) {
      const spec = KEY_TYPE_SPECS[t];
      expect(spec.type).toBe(t);
      expect(spec.usages).toContain(spec.defaultUsage);
      expect(spec.usages.includes('sign')).toBe(spec.jws !== undefined);
      for (const alg of spec.jws ?? [])
        expect(signatureAlgorithmSpec(alg)?.family).toBe(spec.family);
      if (spec.jwe) expect(spec.usages).toContain('encrypt');
    }
  });

  it('when a Node key type is named by a row, then this Node generates it', () => {
    const seen = new Set<string>();
    for (const t of KEY_TYPES) {
      const n = KEY_TYPE_SPECS[t].nodeKeyType;
      if (
        !n ||
        n === 'rsa' ||
        n === 'rsa-pss' ||
        n === 'ec' ||
        seen.has(n) ||
        n.startsWith('slh-dsa-')
      )
        continue;
      seen.add(n);
      const { publicKey } = (
        generateKeyPairSync as unknown as (t: string) => {
          publicKey: { asymmetricKeyType?: string };
        }
      )(n);
      expect(publicKey.asymmetricKeyType).toBe(n);
    }
  });

  it('when the rows are read by usage, then they match the contract: AES encrypts only, Ed25519 and the DSAs sign only, RSA and EC do both', () => {
    const usages = (t: KeyType) => [...KEY_TYPE_SPECS[t].usages].sort();
    expect(usages('aes-256')).toEqual(['encrypt']);
    expect(usages('rsa-2048')).toEqual(['encrypt', 'sign']);
    expect(usages('ec-p384')).toEqual(['encrypt', 'sign']);
    expect(usages('ed25519')).toEqual(['sign']);
    expect(usages('ed448')).toEqual(['sign']);
    expect(usages('rsa-pss-3072')).toEqual(['sign']);
    expect(usages('ml-kem-1024')).toEqual(['encrypt']);
    expect(usages('ml-dsa-87')).toEqual(['sign']);
    expect(usages('slh-dsa-shake-192s')).toEqual(['sign']);
    expect(usages('x25519-ml-kem-768')).toEqual(['encrypt']);
  });

  it('when slow kinds are asked for, then RSA and RSASSA-PSS 3072/4096 and SLH-DSA are marked for the pool and the rest are not', () => {
    const slow = KEY_TYPES.filter((t) => KEY_TYPE_SPECS[t].slowGeneration);
    expect(slow).toEqual([
      'rsa-3072',
      'rsa-4096',
      'rsa-pss-3072',
      'rsa-pss-4096',
      ...KEY_TYPES.filter((t) => t.startsWith('slh-dsa-')),
    ]);
  });

  it('when the default JOSE algorithms are read, then they are dir/AnGCM, RSA-OAEP-256, ECDH-ES+A256KW, RS256, ES256/384/512 and EdDSA', () => {
    expect(KEY_TYPE_SPECS['aes-128'].jwe).toEqual({ alg: 'dir', enc: 'A128GCM' });
    expect(KEY_TYPE_SPECS['aes-256'].jwe).toEqual({ alg: 'dir', enc: 'A256GCM' });
    expect(KEY_TYPE_SPECS['rsa-4096'].jwe).toEqual({ alg: 'RSA-OAEP-256', enc: 'A256GCM' });
    expect(KEY_TYPE_SPECS['ec-p521'].jwe).toEqual({ alg: 'ECDH-ES+A256KW', enc: 'A256GCM' });
    expect(KEY_TYPE_SPECS['rsa-2048'].jws?.[0]).toBe('RS256');
    expect([
      KEY_TYPE_SPECS['ec-p256'].jws,
      KEY_TYPE_SPECS['ec-p384'].jws,
      KEY_TYPE_SPECS['ec-p521'].jws,
    ]).toEqual([['ES256'], ['ES384'], ['ES512']]);
    expect(KEY_TYPE_SPECS.ed25519.jws).toEqual(['EdDSA']);
    expect(KEY_TYPE_SPECS['slh-dsa-shake-128f'].jws).toEqual(['SLH-DSA-SHAKE-128f']);
  });

  it('when an unknown type is looked up, then 400 validation_failed lists the known ones', async () => {
    const err = await thrown(() => keyTypeSpec('rsa-1024'));
    expect(err).toMatchObject({ code: 'validation_failed', status: 400 });
  });

  it('when a usage the type lacks is requested, then 422 key_usage_mismatch; when none is requested, then the default', async () => {
    expect(resolveUsage('ec-p256')).toBe('sign');
    expect(resolveUsage('rsa-2048')).toBe('encrypt');
    expect(resolveUsage('rsa-2048', 'sign')).toBe('sign');
    expect(await thrown(() => resolveUsage('ed25519', 'encrypt'))).toMatchObject({
      code: 'key_usage_mismatch',
      status: 422,
    });
    expect(
      await thrown(() => assertUsage({ type: 'rsa-2048', usage: 'sign', kid: 'k' }, 'encrypt')),
    ).toMatchObject({ code: 'key_usage_mismatch' });
  });
});
