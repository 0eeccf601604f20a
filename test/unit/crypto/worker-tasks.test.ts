import { createHash } from 'node:crypto';
import { Piscina } from 'piscina';
import * as tasks from '../../../api/threads/tasks/crypto.ts';
import * as expensive from '../../../api/threads/tasks/expensive.ts';
import {
  deserializeMaterial,
  generateKeyMaterialSync,
  loadKeyVersion,
  serializeMaterial,
} from '../../../shared/crypto/material.ts';
import { verifyMessage } from '../../../shared/crypto/sign.ts';
import { encryptCompact } from '../../../shared/jose/compact-jwe.ts';
import { errorFromData } from '../../../shared/errors/index.ts';
import { thrown } from './helpers.ts';

/** Bytes as they arrive after a structured clone: a plain Uint8Array, not a Buffer. */
const cloned = (b: Buffer): Uint8Array => new Uint8Array(b);

describe('the crypto pool tasks', () => {
  const rsa = serializeMaterial(generateKeyMaterialSync('rsa-2048'));

  it('when a key is generated in a task, then the serialized material comes back and loads', async () => {
    const blob = await expensive.generateKey({ type: 'ec-p384' });
    expect(deserializeMaterial(blob).type).toBe('ec-p384');
  });

  it('when a task signs data or a digest, then the signatures verify on the calling side', async () => {
    const key = loadKeyVersion(deserializeMaterial(rsa), { kid: 'k', version: 1, usage: 'sign' });
    const data = Buffer.from('signed in the pool');
    const bySign = await tasks.signWithKey({
      material: cloned(rsa),
      usage: 'sign',
      input: { data: cloned(data) },
    });
    expect(bySign.algorithm).toBe('RS256');
    expect(verifyMessage(key, { data }, Buffer.from(bySign.signature))).toBe(true);
    const digest = createHash('sha512').update(data).digest();
    const byDigest = await tasks.signWithKey({
      material: cloned(rsa),
      usage: 'sign',
      input: { digest: cloned(digest) },
      algorithm: 'PS512',
    });
    expect(verifyMessage(key, { data }, Buffer.from(byDigest.signature), 'PS512')).toBe(true);
    await expect(
      tasks.verifyWithKey({
        material: cloned(rsa),
        usage: 'sign',
        input: { data: cloned(data) },
        signature: byDigest.signature,
        algorithm: 'PS512',
      }),
    ).resolves.toEqual({ valid: true });
  });

  it('when a task decrypts a JWE for the key version it was given, then the plaintext comes back', async () => {
    const key = loadKeyVersion(deserializeMaterial(rsa), {
      kid: 'orders',
      version: 3,
      usage: 'encrypt',
    });
    const jwe = encryptCompact(key, Buffer.from('to the pool'));
    const { plaintext } = await tasks.decryptCompactWithKey({
      material: cloned(rsa),
      kid: 'orders',
      version: 3,
      usage: 'encrypt',
      jwe,
    });
    expect(Buffer.from(plaintext).toString()).toBe('to the pool');
    const { jwe: again } = await tasks.encryptCompactWithKey({
      material: cloned(rsa),
      kid: 'orders',
      version: 3,
      usage: 'encrypt',
      plaintext: cloned(Buffer.from('and back')),
    });
    expect(
      Buffer.from(
        (
          await tasks.decryptCompactWithKey({
            material: cloned(rsa),
            kid: 'orders',
            version: 3,
            jwe: again,
          })
        ).plaintext,
      ).toString(),
    ).toBe('and back');
  });

  it('when a task encapsulates and another decapsulates, then both hold the same secret', async () => {
    const kem = serializeMaterial(generateKeyMaterialSync('x25519-ml-kem-768'));
    const { ciphertext, sharedSecret } = await tasks.encapsulateWithKey({ material: cloned(kem) });
    const back = await tasks.decapsulateWithKey({
      material: cloned(kem),
      ciphertext: cloned(Buffer.from(ciphertext)),
    });
    expect(Buffer.from(back.sharedSecret).equals(Buffer.from(sharedSecret))).toBe(true);
  });

  it('when a task fails, then it throws plain {code, message} data that errorFromData rebuilds', async () => {
    const failures = [
      await thrown(() => expensive.generateKey({ type: 'rsa-1024' })),
      await thrown(() => tasks.decryptCompactWithKey({ material: cloned(rsa), jwe: 'x.y.z' })),
      await thrown(() =>
        tasks.signWithKey({
          material: cloned(rsa),
          input: { data: new Uint8Array(1) },
          usage: 'encrypt',
        }),
      ),
      await thrown(() =>
        tasks.signWithKey({
          material: new Uint8Array([1, 2, 3]),
          input: { data: new Uint8Array(1) },
        }),
      ),
      await thrown(() => tasks.signWithKey({ material: cloned(rsa), input: {} })),
    ];
    expect(failures.map((f) => f.code)).toEqual([
      'validation_failed',
      'decryption_failed',
      'key_usage_mismatch',
      'internal',
      'validation_failed',
    ]);
    for (const f of failures) {
      expect(Object.getPrototypeOf(f)).toBe(Object.prototype);
      expect(structuredClone(f)).toEqual(f);
      expect(errorFromData(f).code).toBe(f.code);
    }
  });

  it('when the tasks run in a real piscina pool, then the TypeScript task file loads in a worker and errors cross as plain data', async () => {
    const pool = new Piscina({
      filename: new URL('../../../api/threads/tasks/index.ts', import.meta.url).href,
      maxThreads: 1,
    });
    try {
      const blob = (await pool.run({ type: 'ed25519' }, { name: 'generateKey' })) as Uint8Array;
      const key = loadKeyVersion(deserializeMaterial(blob), {
        kid: 'k',
        version: 1,
        usage: 'sign',
      });
      const data = Buffer.from('from a worker thread');
      const { signature } = (await pool.run(
        { material: blob, input: { data } },
        { name: 'signWithKey' },
      )) as { signature: Uint8Array };
      expect(verifyMessage(key, { data }, Buffer.from(signature))).toBe(true);
      const err = await thrown(() =>
        pool.run({ material: blob, input: { digest: Buffer.alloc(32) } }, { name: 'signWithKey' }),
      );
      expect(err).toMatchObject({ code: 'unprocessable' });
    } finally {
      await pool.destroy();
    }
  });
});
