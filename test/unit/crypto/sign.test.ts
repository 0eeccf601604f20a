import { createHash, verify as nodeVerify } from 'node:crypto';
import { CompactSign, compactVerify, importJWK } from 'jose';
import type { JWK } from 'jose';
import {
  signMessage,
  signMessageAsync,
  verifyMessage,
  verifyMessageAsync,
} from '../../../shared/crypto/sign.ts';
import { loadKeyObjects } from '../../../shared/crypto/material.ts';
import type { LoadedKeyVersion } from '../../../shared/crypto/material.ts';
import type { KeyType } from '../../../shared/crypto/registry.ts';
import { flipBit, keyOf, thrown } from './helpers.ts';

/** Every JOSE algorithm jose can check, with the key type that signs it. */
const JOSE_CHECKED: [KeyType, string][] = [
  ['rsa-2048', 'RS256'],
  ['rsa-2048', 'RS384'],
  ['rsa-2048', 'RS512'],
  ['rsa-2048', 'PS256'],
  ['rsa-2048', 'PS384'],
  ['rsa-2048', 'PS512'],
  ['ec-p256', 'ES256'],
  ['ec-p384', 'ES384'],
  ['ec-p521', 'ES512'],
  ['ed25519', 'EdDSA'],
  ['ml-dsa-44', 'ML-DSA-44'],
  ['ml-dsa-65', 'ML-DSA-65'],
  ['ml-dsa-87', 'ML-DSA-87'],
];
const PREHASHED = JOSE_CHECKED.filter(([, alg]) => /^(RS|PS|ES)/.test(alg));
const HASH = { 256: 'sha256', 384: 'sha384', 512: 'sha512' } as const;
const hashOf = (alg: string) => HASH[alg.slice(2) as '256' | '384' | '512'];

/** The JWS signing input ASCII(BASE64URL(header) '.' BASE64URL(payload)) of RFC 7515 section 5.1. */
function signingInput(alg: string, payload: string): { head: string; input: Buffer } {
  const head = `${Buffer.from(JSON.stringify({ alg })).toString('base64url')}.${Buffer.from(payload).toString('base64url')}`;
  return { head, input: Buffer.from(head, 'ascii') };
}

const joseVerifyKey = (key: LoadedKeyVersion, alg: string) =>
  importJWK(key.publicKey!.export({ format: 'jwk' }) as JWK, alg);

describe('sign and verify', () => {
  it.each(JOSE_CHECKED)(
    'when a %s key signs data as %s, then jose verifies it as a JWS over the same bytes',
    async (type, alg) => {
      const key = await keyOf(type, 'sign');
      const { head, input } = signingInput(alg, 'the payload');
      const { signature, algorithm } = signMessage(key, { data: input }, alg);
      expect(algorithm).toBe(alg);
      const { payload, protectedHeader } = await compactVerify(
        `${head}.${signature.toString('base64url')}`,
        await joseVerifyKey(key, alg),
      );
      expect(Buffer.from(payload).toString()).toBe('the payload');
      expect(protectedHeader.alg).toBe(alg);
    },
  );

  it.each(JOSE_CHECKED)(
    'when jose signs with a %s key as %s, then we verify the signature over the signing input',
    async (type, alg) => {
      const key = await keyOf(type, 'sign');
      const privateKey = await importJWK(key.privateKey!.export({ format: 'jwk' }) as JWK, alg);
      const jws = await new CompactSign(Buffer.from('from jose'))
        .setProtectedHeader({ alg })
        .sign(privateKey);
      const [h, p, s] = jws.split('.');
      const input = Buffer.from(`${h}.${p}`, 'ascii');
      expect(verifyMessage(key, { data: input }, Buffer.from(s, 'base64url'), alg)).toBe(true);
      expect(verifyMessage(key, { data: flipBit(input) }, Buffer.from(s, 'base64url'), alg)).toBe(
        false,
      );
    },
  );

  it.each(PREHASHED)(
    'when a %s key signs a digest as %s, then it is the signature of the message the digest came from',
    async (type, alg) => {
      const key = await keyOf(type, 'sign');
      const { head, input } = signingInput(alg, 'hashed by the client');
      const digest = createHash(hashOf(alg)).update(input).digest();
      const { signature } = signMessage(key, { digest }, alg);
      await expect(
        compactVerify(`${head}.${signature.toString('base64url')}`, await joseVerifyKey(key, alg)),
      ).resolves.toBeDefined();
      expect(verifyMessage(key, { data: input }, signature, alg)).toBe(true);
      expect(verifyMessage(key, { digest }, signature, alg)).toBe(true);
      const fromData = signMessage(key, { data: input }, alg).signature;
      expect(verifyMessage(key, { digest }, fromData, alg)).toBe(true);
      expect(verifyMessage(key, { digest: flipBit(digest) }, fromData, alg)).toBe(false);
      expect(verifyMessage(key, { digest }, flipBit(fromData), alg)).toBe(false);
    },
  );

  it('when EC keys sign, then the signatures are IEEE P1363 of 64, 96 and 132 bytes', async () => {
    const lengths: number[] = [];
    for (const t of ['ec-p256', 'ec-p384', 'ec-p521'] as const) {
      const key = await keyOf(t, 'sign');
      lengths.push(signMessage(key, { data: Buffer.from('x') }).signature.length);
      lengths.push(
        signMessage(key, {
          digest: Buffer.alloc(t === 'ec-p256' ? 32 : t === 'ec-p384' ? 48 : 64, 1),
        }).signature.length,
      );
    }
    expect(lengths).toEqual([64, 64, 96, 96, 132, 132]);
  });

  it('when no algorithm is given, then the key default is used: RS256, ES256/384/512, EdDSA, ML-DSA-65, SLH-DSA-SHA2-128f', async () => {
    const defaults: string[] = [];
    for (const t of [
      'rsa-2048',
      'ec-p256',
      'ec-p384',
      'ec-p521',
      'ed25519',
      'ml-dsa-65',
      'slh-dsa-sha2-128f',
    ] as const) {
      defaults.push(signMessage(await keyOf(t, 'sign'), { data: Buffer.from('x') }).algorithm);
    }
    expect(defaults).toEqual([
      'RS256',
      'ES256',
      'ES384',
      'ES512',
      'EdDSA',
      'ML-DSA-65',
      'SLH-DSA-SHA2-128f',
    ]);
  });

  it('when an AWS KMS algorithm name is given, then it maps to the JOSE algorithm', async () => {
    const rsa = await keyOf('rsa-2048', 'sign');
    expect(signMessage(rsa, { data: Buffer.from('x') }, 'RSASSA_PSS_SHA_384').algorithm).toBe(
      'PS384',
    );
    expect(
      signMessage(await keyOf('ec-p256', 'sign'), { data: Buffer.from('x') }, 'ECDSA_SHA_256')
        .algorithm,
    ).toBe('ES256');
    expect(
      signMessage(await keyOf('ed25519', 'sign'), { data: Buffer.from('x') }, 'Ed25519').algorithm,
    ).toBe('EdDSA');
  });

  it('when an SLH-DSA key signs, then Node verifies the pure FIPS 205 signature and a changed message fails', async () => {
    const key = await keyOf('slh-dsa-sha2-128f', 'sign');
    const data = Buffer.from('long-lived firmware image');
    const { signature, algorithm } = signMessage(key, { data });
    expect(algorithm).toBe('SLH-DSA-SHA2-128f');
    expect(signature).toHaveLength(17088);
    expect(nodeVerify(null, data, key.publicKey!, signature)).toBe(true);
    expect(verifyMessage(key, { data }, signature)).toBe(true);
    expect(verifyMessage(key, { data: flipBit(data) }, signature)).toBe(false);
  });

  it.each(['ed25519', 'ml-dsa-44', 'slh-dsa-sha2-128f'] as const)(
    'when a %s key is given a digest, then 422: a pure signature scheme signs the message itself',
    async (type) => {
      const key = await keyOf(type, 'sign');
      for (const digest of [Buffer.alloc(32), Buffer.alloc(64)]) {
        expect(await thrown(() => signMessage(key, { digest }))).toMatchObject({
          code: 'unprocessable',
          status: 422,
        });
        expect(await thrown(() => verifyMessage(key, { digest }, Buffer.alloc(64)))).toMatchObject({
          code: 'unprocessable',
        });
      }
    },
  );

  it('when a digest has the wrong length for the algorithm, then 400 validation_failed', async () => {
    const rsa = await keyOf('rsa-2048', 'sign');
    expect(
      await thrown(() => signMessage(rsa, { digest: Buffer.alloc(48) }, 'RS256')),
    ).toMatchObject({ code: 'validation_failed', status: 400 });
    const ec = await keyOf('ec-p384', 'sign');
    expect(await thrown(() => signMessage(ec, { digest: Buffer.alloc(32) }))).toMatchObject({
      code: 'validation_failed',
    });
  });

  it('when both data and digest, or neither, are sent, then 400 validation_failed', async () => {
    const key = await keyOf('ec-p256', 'sign');
    const both = { data: Buffer.from('x'), digest: Buffer.alloc(32) } as unknown as {
      data: Buffer;
    };
    expect(await thrown(() => signMessage(key, both))).toMatchObject({ code: 'validation_failed' });
    expect(await thrown(() => signMessage(key, {} as { data: Buffer }))).toMatchObject({
      code: 'validation_failed',
    });
  });

  it('when an algorithm the key does not have is asked for, then 422 unprocessable; an unknown name is 400', async () => {
    const ec = await keyOf('ec-p256', 'sign');
    expect(await thrown(() => signMessage(ec, { data: Buffer.from('x') }, 'ES384'))).toMatchObject({
      code: 'unprocessable',
      status: 422,
    });
    expect(await thrown(() => signMessage(ec, { data: Buffer.from('x') }, 'RS256'))).toMatchObject({
      code: 'unprocessable',
    });
    expect(await thrown(() => signMessage(ec, { data: Buffer.from('x') }, 'HS256'))).toMatchObject({
      code: 'validation_failed',
    });
    expect(
      await thrown(() => signMessage(ec, { data: Buffer.from('x') }, 'constructor')),
    ).toMatchObject({ code: 'validation_failed' });
  });

  it('when a key created to encrypt is asked to sign or verify, then 422 key_usage_mismatch', async () => {
    const key = await keyOf('rsa-2048', 'encrypt');
    expect(await thrown(() => signMessage(key, { data: Buffer.from('x') }))).toMatchObject({
      code: 'key_usage_mismatch',
      status: 422,
    });
    expect(
      await thrown(() => verifyMessage(key, { data: Buffer.from('x') }, Buffer.alloc(256))),
    ).toMatchObject({ code: 'key_usage_mismatch' });
  });

  it('when a signature is garbage (wrong length, too large, empty), then verify answers false instead of throwing', async () => {
    for (const [type, alg] of [
      ['rsa-2048', 'RS256'],
      ['rsa-2048', 'PS256'],
      ['ec-p256', 'ES256'],
      ['ed25519', 'EdDSA'],
      ['ml-dsa-44', 'ML-DSA-44'],
    ] as const) {
      const key = await keyOf(type, 'sign');
      for (const sig of [
        Buffer.alloc(0),
        Buffer.alloc(7, 1),
        Buffer.alloc(256, 0xff),
        Buffer.alloc(64, 0xff),
      ]) {
        expect(verifyMessage(key, { data: Buffer.from('x') }, sig, alg)).toBe(false);
        if (type.startsWith('rsa') || type.startsWith('ec'))
          expect(verifyMessage(key, { digest: Buffer.alloc(32) }, sig, alg)).toBe(false);
      }
    }
  });

  it('when only the public key is held, then it verifies but signing is 422', async () => {
    const full = await keyOf('ec-p256', 'sign');
    const publicOnly = {
      ...loadKeyObjects({
        type: 'ec-p256',
        publicKeyDer: full.publicKey!.export({ type: 'spki', format: 'der' }),
      }),
      usage: 'sign' as const,
    };
    const { signature } = signMessage(full, { data: Buffer.from('x') });
    expect(verifyMessage(publicOnly, { data: Buffer.from('x') }, signature)).toBe(true);
    expect(await thrown(() => signMessage(publicOnly, { data: Buffer.from('x') }))).toMatchObject({
      code: 'unprocessable',
    });
  });

  it('when signing and verifying on the thread pool, then the results match the synchronous functions', async () => {
    for (const type of ['rsa-2048', 'ml-dsa-65', 'slh-dsa-sha2-128f'] as const) {
      const key = await keyOf(type, 'sign');
      const data = Buffer.from(`async ${type}`);
      const { signature, algorithm } = await signMessageAsync(key, { data });
      expect(verifyMessage(key, { data }, signature, algorithm)).toBe(true);
      await expect(verifyMessageAsync(key, { data }, signature)).resolves.toBe(true);
      await expect(verifyMessageAsync(key, { data: flipBit(data) }, signature)).resolves.toBe(
        false,
      );
    }
    const rsa = await keyOf('rsa-2048', 'sign');
    const digest = createHash('sha256').update('d').digest();
    const { signature } = await signMessageAsync(rsa, { digest }, 'PS256');
    await expect(
      verifyMessageAsync(rsa, { data: Buffer.from('d') }, signature, 'PS256'),
    ).resolves.toBe(true);
  });
});
