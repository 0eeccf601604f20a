import { createPublicKey, generateKeyPairSync, randomBytes } from 'node:crypto';
import { importJWK } from 'jose';
import { KEY_TYPES, KEY_TYPE_SPECS } from '../../../shared/crypto/registry.ts';
import type { KeyType } from '../../../shared/crypto/registry.ts';
import {
  deserializeMaterial,
  generateKeyMaterial,
  generateKeyMaterialSync,
  hybridMaterialFromSeed,
  loadKeyObjects,
  loadKeyVersion,
  publicJwk,
  serializeMaterial,
} from '../../../shared/crypto/material.ts';
import type { KeyMaterial } from '../../../shared/crypto/material.ts';
import { decryptCompact, encryptCompact } from '../../../shared/jose/compact-jwe.ts';
import { signMessageAsync, verifyMessage } from '../../../shared/crypto/sign.ts';
import { decapsulate, encapsulate } from '../../../shared/crypto/pqc.ts';
import { computeMac, macMatches } from '../../../shared/crypto/mac.ts';
import { thrown } from './helpers.ts';

describe('key material', () => {
  const materials = new Map<KeyType, KeyMaterial>();

  beforeAll(async () => {
    // Generated concurrently on libuv's pool: RSA-4096 and the SLH-DSA "s" variants dominate.
    const all = await Promise.all(
      KEY_TYPES.map(async (t) => [t, await generateKeyMaterial(t)] as const),
    );
    for (const [t, m] of all) materials.set(t, m);
  });

  it.each(KEY_TYPES)(
    'when a key of type %s is generated, then it survives serialization byte for byte and loads as its type',
    (type) => {
      const m = materials.get(type)!;
      const blob = serializeMaterial(m);
      const back = deserializeMaterial(blob);
      expect(back).toEqual(m);
      expect(serializeMaterial(back).equals(blob)).toBe(true);
      const loaded = loadKeyObjects(back);
      expect(loaded.type).toBe(type);
      const spec = KEY_TYPE_SPECS[type];
      if (spec.symmetric) expect(loaded.secretKey?.symmetricKeySize).toBe(spec.bits / 8);
      else if (spec.family === 'hybrid')
        expect(loaded.components?.map((c) => c.publicKey.asymmetricKeyType)).toEqual(
          spec.components,
        );
      else expect(loaded.publicKey?.asymmetricKeyType).toBe(spec.nodeKeyType);
      if (spec.family === 'rsa')
        expect(loaded.privateKey?.asymmetricKeyDetails?.modulusLength).toBe(spec.bits);
    },
  );

  it.each(KEY_TYPES)(
    'when a key of type %s is loaded from its stored form, then it performs its default usage end to end',
    async (type) => {
      const spec = KEY_TYPE_SPECS[type];
      const key = loadKeyVersion(deserializeMaterial(serializeMaterial(materials.get(type)!)), {
        kid: `k-${type}`,
        version: 1,
        usage: spec.defaultUsage,
      });
      const message = Buffer.from(`a message for ${type}`);
      if (spec.family === 'ml-kem' || spec.family === 'hybrid') {
        const { ciphertext, sharedSecret } = encapsulate(key);
        expect(decapsulate(key, ciphertext).equals(sharedSecret)).toBe(true);
      } else if (spec.family === 'okp' && spec.defaultUsage === 'encrypt') {
        // X25519 and X448 only receive CMS key agreement (test/integration/migration/xdh-recipients).
        expect(() => encryptCompact(key, message)).toThrow(/does not encrypt JWE/);
      } else if (spec.defaultUsage === 'encrypt') {
        expect(decryptCompact(encryptCompact(key, message), () => key).equals(message)).toBe(true);
      } else if (spec.defaultUsage === 'mac') {
        const mac = computeMac(key, message);
        expect(macMatches(key, message, mac)).toBe(true);
        expect(macMatches(key, Buffer.from('another message'), mac)).toBe(false);
      } else {
        const { signature } = await signMessageAsync(key, { data: message });
        expect(verifyMessage(key, { data: message }, signature)).toBe(true);
        expect(verifyMessage(key, { data: Buffer.from('another message') }, signature)).toBe(false);
      }
    },
  );

  it('when generated synchronously, then each family yields material of the same shape as the asynchronous path', () => {
    for (const t of [
      'aes-128',
      'rsa-2048',
      'ec-p384',
      'ed25519',
      'ml-kem-1024',
      'ml-dsa-44',
      'slh-dsa-sha2-128f',
      'x25519-ml-kem-768',
      'p256-ml-kem-768',
      'p384-ml-kem-1024',
    ] as const) {
      const m = generateKeyMaterialSync(t);
      expect(Object.keys(m).sort()).toEqual(Object.keys(materials.get(t)!).sort());
      expect(loadKeyObjects(m).type).toBe(t);
    }
  });

  it('when two keys of a type are generated, then they differ', () => {
    expect(
      generateKeyMaterialSync('aes-256').secret!.equals(materials.get('aes-256')!.secret!),
    ).toBe(false);
    expect(
      generateKeyMaterialSync('x25519-ml-kem-768').secret!.equals(
        materials.get('x25519-ml-kem-768')!.secret!,
      ),
    ).toBe(false);
  });

  it('when a stored blob is damaged in any way, then deserializing fails as an internal error instead of half-reading it', async () => {
    const blob = serializeMaterial(materials.get('ec-p256')!);
    const damaged: Buffer[] = [
      Buffer.from('not material'),
      Buffer.concat([blob.subarray(0, 2), Buffer.from([2]), blob.subarray(3)]), // a format version we do not know
      blob.subarray(0, blob.length - 1), // truncated
      Buffer.concat([blob, Buffer.from([0x7f, 0, 0, 0, 0])]), // an unknown tag
      Buffer.concat([blob, blob.subarray(4 + blob[3])]), // every record twice
    ];
    for (const b of damaged)
      expect(await thrown(() => deserializeMaterial(b))).toMatchObject({
        code: 'internal',
        status: 500,
      });
    const relabelled = Buffer.from(blob);
    relabelled.write('ec-p384', 4, 'ascii');
    const wrongType = deserializeMaterial(relabelled);
    expect(await thrown(() => loadKeyObjects(wrongType))).toMatchObject({ code: 'internal' });
    expect(
      await thrown(() => deserializeMaterial(serializeMaterial({ type: 'aes-256' }))),
    ).toMatchObject({ code: 'internal' });
  });

  it('when a stored blob holds a different kind of key than its label, then loading refuses it', async () => {
    const ed = generateKeyPairSync('ed25519');
    const mislabelled: KeyMaterial = {
      type: 'ec-p256',
      publicKeyDer: ed.publicKey.export({ type: 'spki', format: 'der' }),
    };
    expect(await thrown(() => loadKeyObjects(mislabelled))).toMatchObject({ code: 'internal' });
    expect(
      await thrown(() => loadKeyObjects({ type: 'aes-256', secret: Buffer.alloc(16) })),
    ).toMatchObject({ code: 'internal' });
  });

  it('when only the public key is stored, then it loads with no private part', () => {
    const m = materials.get('ec-p256')!;
    const loaded = loadKeyObjects({ type: 'ec-p256', publicKeyDer: m.publicKeyDer });
    expect(loaded.privateKey).toBeUndefined();
    expect(loaded.publicKey?.asymmetricKeyType).toBe('ec');
  });

  it('when a key version is loaded for a usage its type lacks, then 422 key_usage_mismatch', async () => {
    expect(
      await thrown(() =>
        loadKeyVersion(materials.get('ed25519')!, { kid: 'k', version: 1, usage: 'encrypt' }),
      ),
    ).toMatchObject({ code: 'key_usage_mismatch', status: 422 });
    expect(
      await thrown(() =>
        loadKeyVersion(materials.get('aes-128')!, { kid: 'k', version: 1, usage: 'sign' }),
      ),
    ).toMatchObject({ code: 'key_usage_mismatch' });
  });

  it.each(['rsa-2048', 'ec-p256', 'ec-p521', 'ed25519', 'ml-dsa-65'] as const)(
    'when the public JWK of a key of type %s is taken, then jose imports it and it carries no private member',
    async (type) => {
      const usage = KEY_TYPE_SPECS[type].defaultUsage;
      const jwk = publicJwk(materials.get(type)!, { kid: 'the-kid', usage });
      expect(jwk).toMatchObject({ kid: 'the-kid', use: usage === 'sign' ? 'sig' : 'enc' });
      for (const secret of ['d', 'p', 'q', 'dp', 'dq', 'qi', 'priv'])
        expect(jwk).not.toHaveProperty(secret);
      const imported = await importJWK(jwk as Parameters<typeof importJWK>[0], jwk.alg as string);
      expect(imported).toBeDefined();
    },
  );

  it('when the public JWK of a hybrid key is taken, then it is the X-Wing encapsulation key pk_M || pk_X, published for HPKE-9', () => {
    const m = materials.get('x25519-ml-kem-768')!;
    const jwk = publicJwk(m);
    const pub = Buffer.from(jwk.pub as string, 'base64url');
    expect(jwk).toMatchObject({ kty: 'AKP', alg: 'HPKE-9' });
    expect(pub).toHaveLength(1216);
    const x = createPublicKey({
      key: m.components![1].publicKeyDer,
      format: 'der',
      type: 'spki',
    }).export({ format: 'raw-public' });
    expect(pub.subarray(1184).equals(x)).toBe(true);
  });

  it.each([
    ['p256-ml-kem-768', 'HPKE-8', 1184, 65],
    ['p384-ml-kem-1024', 'HPKE-10', 1568, 97],
  ] as const)(
    'when the public JWK of a %s key is taken, then it is the AKP JWK of %s with pub = pk_M || the uncompressed curve point',
    (type, alg, mLength, pointLength) => {
      const m = materials.get(type)!;
      const jwk = publicJwk(m);
      const pub = Buffer.from(jwk.pub as string, 'base64url');
      expect(jwk).toEqual({ kty: 'AKP', alg, pub: jwk.pub });
      expect(pub).toHaveLength(mLength + pointLength);
      const point = createPublicKey({
        key: m.components![1].publicKeyDer,
        format: 'der',
        type: 'spki',
      }).export({ format: 'raw-public' });
      expect(point[0]).toBe(0x04);
      expect(pub.subarray(mLength).equals(point)).toBe(true);
      expect(m.secret).toHaveLength(32);
    },
  );

  it('when a P-256 hybrid holds a P-384 point as its curve half, then loading it fails as an internal error', async () => {
    const p256 = hybridMaterialFromSeed('p256-ml-kem-768', randomBytes(32));
    const p384 = hybridMaterialFromSeed('p384-ml-kem-1024', randomBytes(32));
    const mixed = { ...p256, components: [p256.components![0], p384.components![1]] };
    expect(await thrown(() => loadKeyObjects(mixed))).toMatchObject({ code: 'internal' });
  });

  it('when the public JWK of a secret key is asked for, then 422: AES keys have none', async () => {
    expect(await thrown(() => publicJwk(materials.get('aes-256')!))).toMatchObject({
      code: 'key_usage_mismatch',
    });
  });
});
