import { generateKeyMaterialSync, publicJwk } from '../../../shared/crypto/material.ts';
import { assertUsage } from '../../../shared/crypto/registry.ts';
import {
  allowedUsages,
  enabledUsages,
  jwkForUsages,
  readEnabledUsages,
} from '../../../shared/keys/usages.ts';
import { thrown } from '../crypto/helpers.ts';

describe('key usages, declared once', () => {
  it('when a certificate restricts nothing, then a key pair may do everything its type does; else what both allow; without a private key, verify only', () => {
    expect(allowedUsages('rsa-2048', undefined, true)).toEqual(['encrypt', 'sign']);
    expect(allowedUsages('ec-p256', undefined, true)).toEqual(['encrypt', 'sign']);
    expect(allowedUsages('x25519', undefined, true)).toEqual(['encrypt']);
    expect(allowedUsages('ed25519', ['sign', 'encrypt'], true)).toEqual(['sign']);
    expect(allowedUsages('rsa-2048', ['sign'], true)).toEqual(['sign']);
    expect(allowedUsages('rsa-2048', [], true)).toEqual([]);
    expect(allowedUsages('rsa-2048', undefined, false)).toEqual(['verify']);
  });

  it('when a row records no usages (before migration 009, or an older backup), then its one usage is enabled, and the check refuses the other', async () => {
    expect(enabledUsages({ usage: 'encrypt', usages: null })).toEqual(['encrypt']);
    expect(enabledUsages({ usage: 'sign', usages: '["encrypt","sign"]' })).toEqual([
      'encrypt',
      'sign',
    ]);
    const key = { type: 'rsa-2048' as const, usage: 'encrypt' as const, kid: 'k' };
    expect(await thrown(() => assertUsage(key, 'sign'))).toMatchObject({
      code: 'key_usage_mismatch',
      details: { kid: 'k', usages: ['encrypt'], needed: 'sign' },
    });
    expect(() => assertUsage({ ...key, usages: ['encrypt', 'sign'] }, 'sign')).not.toThrow();
  });

  it('when a PATCH names usages, then a list within the allowed ones passes; past them is key-usage-mismatch naming the field; empty, repeated or unknown is 400', async () => {
    expect(readEnabledUsages(['sign'], 'k', ['encrypt', 'sign'])).toEqual(['sign']);
    expect(await thrown(() => readEnabledUsages(['encrypt'], 'k', ['sign']))).toMatchObject({
      code: 'key_usage_mismatch',
      details: { field: 'usages', allowed: ['sign'] },
    });
    for (const bad of [[], ['sign', 'sign'], ['wrap'], 'sign', null])
      expect(await thrown(() => readEnabledUsages(bad, 'k', ['sign']))).toMatchObject({
        code: 'validation_failed',
        details: { field: 'usages' },
      });
  });

  it('when the enabled usages change, then the JWK carries their use and alg (none for both), and an alg of the key itself (HPKE-9 for X-Wing) stays', () => {
    const rsa = generateKeyMaterialSync('rsa-2048');
    const enc = publicJwk(rsa, { usage: 'encrypt' });
    expect(enc).toMatchObject({ use: 'enc', alg: 'RSA-OAEP-256' });
    const both = jwkForUsages('rsa-2048', ['encrypt', 'sign'], enc);
    expect([both.use, both.alg]).toEqual([undefined, undefined]);
    expect(jwkForUsages('rsa-2048', ['sign'], both)).toMatchObject({ use: 'sig', alg: 'RS256' });
    expect(jwkForUsages('rsa-2048', ['sign'], enc)).toMatchObject({ use: 'sig', alg: 'RS256' });
    const xwing = publicJwk(generateKeyMaterialSync('x25519-ml-kem-768'), { usage: 'encrypt' });
    expect(jwkForUsages('x25519-ml-kem-768', ['encrypt'], xwing)).toMatchObject({
      alg: 'HPKE-9',
      use: 'enc',
    });
  });
});
