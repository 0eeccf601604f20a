/**
 * RSASSA-PSS and Ed448 keys on the Core API's sign and verify, and their public JWK: an
 * id-RSASSA-PSS key bound to SHA-384 signs PS384 only (data and digest), is kty RSA with alg PS384
 * in JOSE, and jose verifies what it signs; Ed448 signs EdDSA, not under Ed25519's names.
 */
import { createHash, generateKeyPairSync, verify as nodeVerify } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { compactVerify, importJWK } from 'jose';
import type { JWK } from 'jose';
import { loadKeyVersion, publicJwk } from '../../../shared/crypto/material.ts';
import type { LoadedKeyVersion } from '../../../shared/crypto/material.ts';
import { signMessage, verifyMessage } from '../../../shared/crypto/sign.ts';
import { keyOf, thrown } from './helpers.ts';

/** An imported-like rsa-pss-2048 key whose parameters bind it to SHA-384, MGF1-SHA-384, salt 48. */
function boundPssKey(): LoadedKeyVersion {
  // Node reads these option names; its typings lag behind them.
  const generate = generateKeyPairSync as unknown as (
    type: string,
    options: object,
  ) => { privateKey: KeyObject; publicKey: KeyObject };
  const { privateKey, publicKey } = generate('rsa-pss', {
    modulusLength: 2048,
    hashAlgorithm: 'sha384',
    mgf1HashAlgorithm: 'sha384',
    saltLength: 48,
  });
  return loadKeyVersion(
    {
      type: 'rsa-pss-2048',
      privateKeyDer: privateKey.export({ type: 'pkcs8', format: 'der' }),
      publicKeyDer: publicKey.export({ type: 'spki', format: 'der' }),
    },
    { kid: 'pss-bound', version: 1, usage: 'sign' },
  );
}

function signingInput(alg: string, payload: string): { head: string; input: Buffer } {
  const head = `${Buffer.from(JSON.stringify({ alg })).toString('base64url')}.${Buffer.from(payload).toString('base64url')}`;
  return { head, input: Buffer.from(head, 'ascii') };
}

describe('RSASSA-PSS keys', () => {
  const key = boundPssKey();

  it('when a key bound to SHA-384 signs without naming an algorithm, then it is PS384 and jose verifies it with the public JWK (kty RSA, alg PS384)', async () => {
    const jwk = publicJwk(key, { kid: 'pss-bound#1', usage: 'sign' });
    expect(jwk).toMatchObject({ kty: 'RSA', alg: 'PS384', use: 'sig' });
    const { head, input } = signingInput('PS384', 'bound payload');
    const { signature, algorithm } = signMessage(key, { data: input });
    expect(algorithm).toBe('PS384');
    const { payload } = await compactVerify(
      `${head}.${signature.toString('base64url')}`,
      await importJWK(jwk as JWK, 'PS384'),
    );
    expect(Buffer.from(payload).toString()).toBe('bound payload');
  });

  it('when it signs a digest, then the signature verifies as a PS384 JWS over the message', async () => {
    const { head, input } = signingInput('PS384', 'digest mode');
    const digest = createHash('sha384').update(input).digest();
    const { signature } = signMessage(key, { digest }, 'RSASSA_PSS_SHA_384');
    const jwk = publicJwk(key, { usage: 'sign' });
    await expect(
      compactVerify(
        `${head}.${signature.toString('base64url')}`,
        await importJWK(jwk as JWK, 'PS384'),
      ),
    ).resolves.toBeDefined();
    expect(verifyMessage(key, { data: input }, signature)).toBe(true);
    expect(verifyMessage(key, { digest }, signature)).toBe(true);
  });

  it('when another hash or PKCS#1 v1.5 is asked of it, then 422 names what it signs', async () => {
    for (const alg of ['PS256', 'PS512', 'RS384']) {
      const err = await thrown(() => signMessage(key, { data: Buffer.from('x') }, alg));
      expect(err).toMatchObject({ code: 'unprocessable' });
      expect((err as { details?: unknown }).details).toEqual({ allowed: ['PS384'] });
    }
  });

  it('when a generated rsa-pss key signs, then it is unbound: PS256 by default, PS512 on request, verified by jose', async () => {
    const free = await keyOf('rsa-pss-2048', 'sign');
    expect(signMessage(free, { data: Buffer.from('a') }).algorithm).toBe('PS256');
    const jwk = publicJwk(free, { usage: 'sign' });
    expect(jwk).toMatchObject({ kty: 'RSA', alg: 'PS256' });
    const { head, input } = signingInput('PS512', 'free payload');
    const { signature } = signMessage(free, { data: input }, 'PS512');
    await expect(
      compactVerify(
        `${head}.${signature.toString('base64url')}`,
        await importJWK(jwk as JWK, 'PS512'),
      ),
    ).resolves.toBeDefined();
  });
});

describe('Ed448 keys', () => {
  it('when an Ed448 key signs, then it is EdDSA over the message itself, verified by Node, and its JWK is OKP Ed448', async () => {
    const key = await keyOf('ed448', 'sign');
    const message = Buffer.from('ed448 message');
    const { signature, algorithm } = signMessage(key, { data: message });
    expect(algorithm).toBe('EdDSA');
    expect(signature).toHaveLength(114);
    expect(nodeVerify(null, message, key.publicKey!, signature)).toBe(true);
    expect(publicJwk(key, { usage: 'sign' })).toMatchObject({
      kty: 'OKP',
      crv: 'Ed448',
      alg: 'EdDSA',
    });
  });

  it("when Ed25519's names are asked of an Ed448 key, or a digest, then it is refused", async () => {
    const key = await keyOf('ed448', 'sign');
    expect(
      await thrown(() => signMessage(key, { data: Buffer.from('x') }, 'Ed25519')),
    ).toMatchObject({ code: 'unprocessable' });
    expect(
      await thrown(() => signMessage(key, { digest: createHash('sha512').digest() })),
    ).toMatchObject({ code: 'unprocessable' });
  });
});
