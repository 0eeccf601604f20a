import { CompactEncrypt, compactDecrypt, decodeProtectedHeader, importJWK } from 'jose';
import type { JWK } from 'jose';
import {
  contextDigest,
  decryptCompact,
  decryptCompactAsync,
  encryptCompact,
  parseCompact,
} from '../../../shared/jose/compact-jwe.ts';
import type { LoadedKeyVersion } from '../../../shared/crypto/material.ts';
import { problem } from '../../../shared/errors/index.ts';
import { flipBit, keyOf, thrown } from '../crypto/helpers.ts';
import { createSecretKey } from 'node:crypto';

const CONTEXT_KEY = createSecretKey(Buffer.alloc(32, 9));

const ENCRYPTING = ['aes-128', 'aes-256', 'rsa-2048', 'ec-p256', 'ec-p384', 'ec-p521'] as const;
const message = Buffer.from('{"account":"12-345","amount":"1000.00"}');

/** The key as jose sees it: raw bytes for AES (dir), an imported private JWK otherwise. */
type JoseKey = Awaited<ReturnType<typeof importJWK>>;

async function joseKey(key: LoadedKeyVersion, alg: string): Promise<JoseKey> {
  if (key.secretKey) return new Uint8Array(key.secretKey.export());
  return importJWK(key.privateKey!.export({ format: 'jwk' }) as JWK, alg);
}

/** The recipient side for jose's encryption: the raw secret, or the imported public JWK. */
async function joseRecipientKey(key: LoadedKeyVersion, alg: string): Promise<JoseKey> {
  if (key.secretKey) return new Uint8Array(key.secretKey.export());
  return importJWK(key.publicKey!.export({ format: 'jwk' }) as JWK, alg);
}

/** Rebuilds a compact JWE with one part replaced by the same bytes with a bit flipped. */
function tamper(jwe: string, part: number): string {
  const parts = jwe.split('.');
  parts[part] = flipBit(Buffer.from(parts[part], 'base64url')).toString('base64url');
  return parts.join('.');
}

describe('compact JWE', () => {
  describe.each(ENCRYPTING)('with a key of type %s', (type) => {
    it('when we encrypt, then jose decrypts it and the protected header names kid, ver and the default algorithms', async () => {
      const key = await keyOf(type, 'encrypt', `kid-${type}`, 7);
      const jwe = encryptCompact(key, message);
      const header = decodeProtectedHeader(jwe);
      expect(header).toMatchObject({ ...key.spec.jwe, kid: `kid-${type}#7`, ver: 7 });
      const { plaintext } = await compactDecrypt(jwe, await joseKey(key, key.spec.jwe!.alg));
      expect(Buffer.from(plaintext).equals(message)).toBe(true);
    });

    it('when jose encrypts with the same header members, then we decrypt it', async () => {
      const key = await keyOf(type, 'encrypt', `kid-${type}`, 7);
      const { alg, enc } = key.spec.jwe!;
      const jwe = await new CompactEncrypt(message)
        .setProtectedHeader({ alg, enc, kid: key.kid, ver: key.version })
        .encrypt(await joseRecipientKey(key, alg));
      expect(decryptCompact(jwe, () => key).equals(message)).toBe(true);
    });

    // A dir JWE has an empty encrypted key (part 1): nothing to flip there.
    it.each(type.startsWith('aes') ? [0, 2, 3, 4] : [0, 1, 2, 3, 4])(
      'when a bit of part %i is flipped, then decryption fails with the one opaque decryption_failed',
      async (part) => {
        const key = await keyOf(type, 'encrypt', `kid-${type}`, 7);
        const jwe = encryptCompact(key, message);
        const err = await thrown(() => decryptCompact(tamper(jwe, part), () => key));
        expect(err).toMatchObject({
          code: 'decryption_failed',
          status: 400,
          message: 'decryption failed',
        });
        expect(err.cause).toBeInstanceOf(Error);
      },
    );

    it('when another key of the same type and name is used, then decryption_failed', async () => {
      const key = await keyOf(type, 'encrypt', `kid-${type}`, 7);
      const other = await keyOf(type, 'encrypt', `other-${type}`, 7);
      const impostor: LoadedKeyVersion = { ...other, kid: key.kid };
      expect(
        await thrown(() => decryptCompact(encryptCompact(key, message), () => impostor)),
      ).toMatchObject({ code: 'decryption_failed' });
    });
  });

  it('when the plaintext is empty or a mebibyte, then it round-trips', async () => {
    const key = await keyOf('aes-256', 'encrypt');
    for (const p of [Buffer.alloc(0), Buffer.alloc(1 << 20, 7)])
      expect(decryptCompact(encryptCompact(key, p), () => key).equals(p)).toBe(true);
  });

  it('when the same plaintext is encrypted twice, then the IVs and ciphertexts differ', async () => {
    const key = await keyOf('aes-256', 'encrypt');
    const [a, b] = [encryptCompact(key, message), encryptCompact(key, message)];
    expect(a.split('.')[2]).not.toBe(b.split('.')[2]);
    expect(a.split('.')[3]).not.toBe(b.split('.')[3]);
  });

  it('when a key was rotated, then decrypt picks the version the header names', async () => {
    const v1 = await keyOf('aes-256', 'encrypt', 'rotated', 1);
    const v2 = await keyOf('aes-256', 'encrypt', 'rotated', 2);
    const versions = new Map([
      [1, v1],
      [2, v2],
    ]);
    const asked: number[] = [];
    const lookup = (_kid: string, version: number) => {
      asked.push(version);
      return versions.get(version)!;
    };
    const old = encryptCompact(v1, Buffer.from('old'));
    const fresh = encryptCompact(v2, Buffer.from('new'));
    expect(decryptCompact(old, lookup).toString()).toBe('old');
    expect(decryptCompact(fresh, lookup).toString()).toBe('new');
    expect(asked).toEqual([1, 2]);
    expect(parseCompact(old)).toMatchObject({ kid: 'rotated', version: 1 });
  });

  it('when the key store answers asynchronously, then decryptCompactAsync decrypts the same way', async () => {
    const key = await keyOf('aes-128', 'encrypt');
    const jwe = encryptCompact(key, message);
    expect((await decryptCompactAsync(jwe, async () => key)).equals(message)).toBe(true);
    expect(
      await thrown(() =>
        decryptCompactAsync(jwe, async () => {
          throw problem('key_revoked', 'revoked');
        }),
      ),
    ).toMatchObject({ code: 'key_revoked', status: 409 });
  });

  it('when the lookup fails (unknown kid, revoked key), then its error passes through untouched', async () => {
    const key = await keyOf('aes-256', 'encrypt');
    const err = await thrown(() =>
      decryptCompact(encryptCompact(key, message), () => {
        throw problem('key_not_found', 'no such key');
      }),
    );
    expect(err).toMatchObject({ code: 'key_not_found', status: 404 });
  });

  it('when the input is not a compact JWE naming kid and ver, then decryption_failed without a lookup', async () => {
    const key = await keyOf('aes-256', 'encrypt');
    const jose = await new CompactEncrypt(message)
      .setProtectedHeader({ alg: 'dir', enc: 'A256GCM' })
      .encrypt(new Uint8Array(key.secretKey!.export()));
    let lookups = 0;
    const lookup = () => {
      lookups++;
      return key;
    };
    for (const bad of [
      '',
      'a.b.c.d',
      'a.b.c.d.e.f',
      '!!!.a.b.c.d',
      `${Buffer.from('[1]').toString('base64url')}.a.b.c.d`,
      jose,
    ]) {
      expect(await thrown(() => decryptCompact(bad, lookup))).toMatchObject({
        code: 'decryption_failed',
      });
    }
    expect(lookups).toBe(0);
  });

  it('when header values name Object.prototype members, then they are unknown algorithms, not lookups gone astray', async () => {
    const key = await keyOf('rsa-2048', 'encrypt');
    const [, ...rest] = encryptCompact(key, message).split('.');
    for (const header of [
      { alg: 'RSA-OAEP-256', enc: 'constructor' },
      { alg: '__proto__', enc: 'A256GCM' },
      { alg: 'toString', enc: 'hasOwnProperty' },
    ]) {
      const forged = [
        Buffer.from(JSON.stringify({ ...header, kid: key.kid, ver: 1 })).toString('base64url'),
        ...rest,
      ].join('.');
      expect(await thrown(() => decryptCompact(forged, () => key))).toMatchObject({
        code: 'decryption_failed',
      });
    }
  });

  it('when a JWE carries a critical extension we do not implement, then it is refused even though it is otherwise intact', async () => {
    const key = await keyOf('aes-256', 'encrypt');
    const jwe = await new CompactEncrypt(message)
      .setProtectedHeader({
        alg: 'dir',
        enc: 'A256GCM',
        kid: key.kid,
        ver: key.version,
        crit: ['x-ext'],
        'x-ext': 1,
      })
      .encrypt(new Uint8Array(key.secretKey!.export()), { crit: { 'x-ext': true } });
    expect(await thrown(() => decryptCompact(jwe, () => key))).toMatchObject({
      code: 'decryption_failed',
    });
  });

  it('when jose picks other content encryption or ECDH-ES variants for our keys, then we decrypt those too', async () => {
    const rsa = await keyOf('rsa-2048', 'encrypt');
    const ec = await keyOf('ec-p384', 'encrypt');
    const cases: [LoadedKeyVersion, string, string][] = [
      [rsa, 'RSA-OAEP-256', 'A128GCM'],
      [ec, 'ECDH-ES', 'A256GCM'],
      [ec, 'ECDH-ES+A128KW', 'A192GCM'],
    ];
    for (const [key, alg, enc] of cases) {
      const jwe = await new CompactEncrypt(message)
        .setProtectedHeader({ alg, enc, kid: key.kid, ver: key.version })
        .encrypt(await joseRecipientKey(key, alg));
      expect(decryptCompact(jwe, () => key).equals(message)).toBe(true);
    }
    expect(decodeProtectedHeader(encryptCompact(rsa, message, { enc: 'A128GCM' })).enc).toBe(
      'A128GCM',
    );
  });

  it('when a JWE uses RSA-OAEP with SHA-1 or a dir key of the wrong size, then decryption_failed: only the algorithms we issue are accepted', async () => {
    const rsa = await keyOf('rsa-2048', 'encrypt');
    const oaep1 = await new CompactEncrypt(message)
      .setProtectedHeader({ alg: 'RSA-OAEP', enc: 'A256GCM', kid: rsa.kid, ver: 1 })
      .encrypt(await joseRecipientKey(rsa, 'RSA-OAEP'));
    expect(await thrown(() => decryptCompact(oaep1, () => rsa))).toMatchObject({
      code: 'decryption_failed',
    });
    const aes128 = await keyOf('aes-128', 'encrypt');
    const wrongEnc = await new CompactEncrypt(message)
      .setProtectedHeader({ alg: 'dir', enc: 'A128CBC-HS256', kid: aes128.kid, ver: 1 })
      .encrypt(new Uint8Array(32));
    expect(await thrown(() => decryptCompact(wrongEnc, () => aes128))).toMatchObject({
      code: 'decryption_failed',
    });
  });

  it('when the ephemeral key of an ECDH-ES JWE is not on the curve, then decryption_failed', async () => {
    const key = await keyOf('ec-p256', 'encrypt');
    const [h, ...rest] = encryptCompact(key, message).split('.');
    const header = JSON.parse(Buffer.from(h, 'base64url').toString());
    header.epk.y = Buffer.alloc(32, 1).toString('base64url');
    const forged = [Buffer.from(JSON.stringify(header)).toString('base64url'), ...rest].join('.');
    const err = await thrown(() => decryptCompact(forged, () => key));
    expect(err).toMatchObject({ code: 'decryption_failed' });
  });

  it('when a key was created to sign, then encrypting or decrypting with it is 422 key_usage_mismatch', async () => {
    const signing = await keyOf('rsa-2048', 'sign');
    const encrypting = await keyOf('rsa-2048', 'encrypt');
    expect(await thrown(() => encryptCompact(signing, message))).toMatchObject({
      code: 'key_usage_mismatch',
      status: 422,
    });
    const jwe = encryptCompact(encrypting, message);
    expect(await thrown(() => decryptCompact(jwe, () => signing))).toMatchObject({
      code: 'key_usage_mismatch',
    });
  });

  it('when a KEM key encrypts a JWE, then it is HPKE Integrated Encryption (HPKE-12, no enc), and a requested enc is 400', async () => {
    const kem = await keyOf('ml-kem-768', 'encrypt');
    const jwe = encryptCompact(kem, message);
    expect(decodeProtectedHeader(jwe)).toMatchObject({ alg: 'HPKE-12' });
    expect(decodeProtectedHeader(jwe)).not.toHaveProperty('enc');
    expect(decryptCompact(jwe, () => kem).equals(message)).toBe(true);
    expect(await thrown(() => encryptCompact(kem, message, { enc: 'A256GCM' }))).toMatchObject({
      code: 'validation_failed',
    });
  });

  it('when a context is given in another member order, then the same digest; when text moves between name and value, then another', () => {
    expect(contextDigest({ a: '1', b: '2' }, CONTEXT_KEY)).toBe(
      contextDigest({ b: '2', a: '1' }, CONTEXT_KEY),
    );
    expect(contextDigest({ ab: 'c' }, CONTEXT_KEY)).not.toBe(
      contextDigest({ a: 'bc' }, CONTEXT_KEY),
    );
    expect(contextDigest({}, CONTEXT_KEY)).toBeUndefined();
    expect(contextDigest(undefined, CONTEXT_KEY)).toBeUndefined();
    // Keyed: without the service's key a guessed context cannot be confirmed from a header.
    expect(contextDigest({ tenant: 'acme' }, CONTEXT_KEY)).not.toBe(
      contextDigest({ tenant: 'acme' }, createSecretKey(Buffer.alloc(32, 8))),
    );
  });

  it('when a JWE binds a context, then only its digest decrypts it, and the header kid names the version', async () => {
    const key = await keyOf('aes-256', 'encrypt', 'bound', 3);
    const ctx = contextDigest({ purpose: 'test' }, CONTEXT_KEY);
    const jwe = encryptCompact(key, message, { context: ctx });
    expect(decodeProtectedHeader(jwe)).toMatchObject({ kid: 'bound#3', ver: 3, ctx });
    expect(parseCompact(jwe)).toMatchObject({ kid: 'bound', version: 3 });
    expect(decryptCompact(jwe, () => key, ctx).equals(message)).toBe(true);
    for (const other of [undefined, contextDigest({ purpose: 'other' }, CONTEXT_KEY)]) {
      expect(await thrown(() => decryptCompact(jwe, () => key, other))).toMatchObject({
        code: 'decryption_failed',
      });
    }
    expect(
      await thrown(() => decryptCompact(encryptCompact(key, message), () => key, ctx)),
    ).toMatchObject({ code: 'decryption_failed' });
  });
});
