/**
 * HPKE JWE (draft-ietf-jose-hpke-encrypt with the suites of draft-ietf-jose-hpke-pq-pqt-00)
 * against the draft's published vectors (test/fixtures/pq/jose-hpke-pq-pqt-vectors.json, the
 * repository's examples/jose-vectors.json at commit 9a69cb2), and our outputs opened by an
 * independent implementation (test/support/independent-hpke.ts).
 */
import type { DecipherGCM } from 'node:crypto';
import { createDecipheriv, createPrivateKey, createPublicKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import {
  generateKeyMaterialSync,
  loadKeyObjects,
  loadKeyVersion,
} from '../../../shared/crypto/material.ts';
import { decryptCompact, encryptCompact } from '../../../shared/jose/compact-jwe.ts';
import { hybridExpandSeed } from '../../../shared/crypto/pqc.ts';
import {
  hpkeKeyFromJwk,
  hpkeUnwrap,
  hpkeWrap,
  integratedDecrypt,
  integratedEncrypt,
  recipientMix,
  recipientStructure,
} from '../../../shared/jose/hpke-jwe.ts';
import { hpkeAlg, HPKE_SUITES } from '../../../shared/jose/pq-identifiers.ts';
import type { HpkeKeyType } from '../../../shared/jose/pq-identifiers.ts';
import { jwkThumbprint } from '../../../shared/jose/thumbprint.ts';
import { open } from '../../../shared/crypto/hpke.ts';
import { kemKeyOf } from '../../../shared/jose/hpke-jwe.ts';
import type { ResolvedKey } from '../../../shared/jose/types.ts';
import { hpkeOpen, hpkePublicKey, openCompact } from '../../support/independent-hpke.ts';
import { thrown } from '../crypto/helpers.ts';

interface Vector {
  alg: string;
  jwk: { kty: string; alg: string; kid: string; pub: string; priv: string };
  flattened: Record<string, string>;
  compact: string;
}
const ALL = JSON.parse(
  readFileSync(new URL('../../fixtures/pq/jose-hpke-pq-pqt-vectors.json', import.meta.url), 'utf8'),
) as Vector[];
const SUPPORTED = ALL.filter((v) => hpkeAlg(v.alg));
const PLAINTEXT = ALL[0] && 'You can trust us to stick with you through thick and thin';
const b64 = (s: string) => Buffer.from(s, 'base64url');

/** A tenant key from an HPKE private key (SerializePrivateKey: the ML-KEM d||z or hybrid seed). */
function keyFromSeed(type: HpkeKeyType, seed: Buffer, kid = 'vector'): ResolvedKey {
  if (type !== 'ml-kem-768' && type !== 'ml-kem-1024') {
    const { mlKem, group } = hybridExpandSeed(type, seed);
    return {
      kid,
      version: 1,
      type,
      components: [
        { privateKey: mlKem, publicKey: createPublicKey(mlKem) },
        { privateKey: group, publicKey: createPublicKey(group) },
      ],
    };
  }
  const privateKey = createPrivateKey({ key: seed, format: 'raw-seed', asymmetricKeyType: type });
  return { kid, version: 1, type, privateKey, publicKey: createPublicKey(privateKey) };
}

function publicBytes(key: ResolvedKey): Buffer {
  if (key.components)
    return Buffer.concat(key.components.map((c) => c.publicKey.export({ format: 'raw-public' })));
  return key.publicKey!.export({ format: 'raw-public' });
}

/** A generated tenant key and its HPKE private key for the independent side. */
function generated(type: HpkeKeyType, kid: string): { key: ResolvedKey; seed: Buffer } {
  const m = generateKeyMaterialSync(type);
  const l = loadKeyObjects(m);
  const key: ResolvedKey = {
    kid,
    version: 1,
    type,
    privateKey: l.privateKey,
    publicKey: l.publicKey,
    components: l.components,
  };
  const seed = m.secret ?? l.privateKey!.export({ format: 'raw-seed' });
  return { key, seed };
}

function gcmOpen(enc: string, cek: Buffer, f: Record<string, string>, aad: Buffer): Buffer {
  const d = createDecipheriv(`aes-${enc.slice(1, 4)}-gcm`, cek, b64(f.iv)) as DecipherGCM;
  d.setAAD(aad);
  d.setAuthTag(b64(f.tag));
  return Buffer.concat([d.update(b64(f.ciphertext)), d.final()]);
}

describe('HPKE JWE: the published vectors of draft-ietf-jose-hpke-pq-pqt', () => {
  it('holds a vector for every suite this service writes', () => {
    const written = [...HPKE_SUITES.values()].flatMap((s) => [s.integrated, s.keyEncryption]);
    expect(SUPPORTED.map((v) => v.alg).sort()).toEqual(written.sort());
  });

  it.each(SUPPORTED.map((v) => [v.alg, v] as const))(
    'when the %s vector key is loaded from its private seed, then its public key is the pub byte for byte and its kid the RFC 7638 thumbprint over alg, kty, pub',
    async (_alg, v) => {
      const key = keyFromSeed(hpkeAlg(v.alg)!.type, b64(v.jwk.priv));
      expect(publicBytes(key).equals(b64(v.jwk.pub))).toBe(true);
      // The independent KEM derives the same key from the same seed.
      expect((await hpkePublicKey(v.alg, b64(v.jwk.priv))).equals(b64(v.jwk.pub))).toBe(true);
      expect(jwkThumbprint(v.jwk)).toBe(v.jwk.kid);
    },
  );

  it.each(SUPPORTED.filter((v) => !v.alg.endsWith('-KE')).map((v) => [v.alg, v] as const))(
    "when the %s vectors (compact, and flattened with aad) are opened by our reader, then the plaintext is the draft's",
    (_alg, v) => {
      const key = keyFromSeed(hpkeAlg(v.alg)!.type, b64(v.jwk.priv));
      expect(integratedDecrypt(key, v.compact).toString()).toContain(PLAINTEXT);
      const f = v.flattened;
      const pt = open(
        kemKeyOf(key),
        b64(f.encrypted_key),
        Buffer.alloc(0),
        Buffer.from(`${f.protected}.${f.aad}`),
        b64(f.ciphertext),
      );
      expect(pt.toString()).toContain(PLAINTEXT);
    },
  );

  it.each(SUPPORTED.filter((v) => v.alg.endsWith('-KE')).map((v) => [v.alg, v] as const))(
    "when the %s vectors are opened by our key unwrapping, then the content key decrypts the draft's plaintext",
    (_alg, v) => {
      const key = keyFromSeed(hpkeAlg(v.alg)!.type, b64(v.jwk.priv));
      const [h, ek, iv, ciphertext, tag] = v.compact.split('.');
      const header = JSON.parse(b64(h).toString()) as Record<string, string>;
      const cek = hpkeUnwrap(key, header, b64(ek), header.enc, 32);
      expect(
        gcmOpen(header.enc, cek, { iv, ciphertext, tag }, Buffer.from(h)).toString(),
      ).toContain(PLAINTEXT);
      const f = v.flattened;
      const fh = JSON.parse(b64(f.protected).toString()) as Record<string, string>;
      const fcek = hpkeUnwrap(key, fh, b64(f.encrypted_key), fh.enc, 32);
      expect(gcmOpen(fh.enc, fcek, f, Buffer.from(`${f.protected}.${f.aad}`)).toString()).toContain(
        PLAINTEXT,
      );
    },
  );

  it.each(SUPPORTED.map((v) => [v.alg, v] as const))(
    'when the independent reader opens the %s compact vector, then it reads the plaintext (the check of the reader itself)',
    async (_alg, v) => {
      expect((await openCompact(v.compact, b64(v.jwk.priv))).toString()).toContain(PLAINTEXT);
    },
  );

  it.each(SUPPORTED.filter((v) => !v.alg.endsWith('-KE')).map((v) => [v.alg, v] as const))(
    'when the private %s vector JWK is read as `keyward open --key` reads it, then it opens the compact vector, and a pub of another key is refused',
    async (_alg, v) => {
      const key = hpkeKeyFromJwk(v.jwk);
      expect(integratedDecrypt(key, v.compact).toString()).toContain(PLAINTEXT);
      const other = ALL.find((o) => o.alg === `${v.alg}-KE`)!;
      expect(await thrown(() => hpkeKeyFromJwk({ ...v.jwk, pub: other.jwk.pub }))).toMatchObject({
        code: 'validation_failed',
      });
    },
  );

  it("when the Recipient_structure for A128GCM is built, then it is the draft's example bytes", () => {
    expect(recipientStructure('A128GCM').toString('hex')).toBe(
      '4a4f53452d48504b452072637074ff4131323847434dff',
    );
  });
});

describe('HPKE JWE: our outputs opened by an independent implementation', () => {
  const TYPES = [...HPKE_SUITES.keys()];

  it.each(TYPES)(
    'when a %s key receives an Integrated Encryption compact JWE, then the independent reader opens it and our reader too',
    async (type) => {
      const { key, seed } = generated(type, 'pq-target');
      const message = Buffer.from('post-quantum archive record');
      const compact = integratedEncrypt(key, message);
      const header = JSON.parse(b64(compact.split('.')[0]).toString()) as Record<string, unknown>;
      expect(header).toEqual({ alg: HPKE_SUITES.get(type)!.integrated, kid: 'pq-target#1' });
      expect((await openCompact(compact, seed)).equals(message)).toBe(true);
      expect(integratedDecrypt(key, compact).equals(message)).toBe(true);
    },
  );

  it.each(TYPES)(
    'when a content key is wrapped for a %s key with Key Encryption, then the independent HPKE opens it with the Recipient_structure of enc',
    async (type) => {
      const { key, seed } = generated(type, 'pq-target');
      const cek = Buffer.alloc(32, 7);
      const r = hpkeWrap(key, cek, 'A256GCM');
      expect(r.header.alg).toBe(HPKE_SUITES.get(type)!.keyEncryption);
      const opened = await hpkeOpen(
        r.header.alg,
        seed,
        b64(r.header.ek),
        recipientStructure('A256GCM'),
        new Uint8Array(0),
        b64(r.encrypted_key),
      );
      expect(opened.equals(cek)).toBe(true);
      expect(hpkeUnwrap(key, r.header, b64(r.encrypted_key), 'A256GCM', 32).equals(cek)).toBe(true);
    },
  );

  it('when a wrapped content key is opened for another enc or with a flipped byte, then a random key of the right length stands in (the failure comes at the tag)', () => {
    const { key } = generated('ml-kem-768', 'pq-target');
    const cek = Buffer.alloc(32, 7);
    const r = hpkeWrap(key, cek, 'A256GCM');
    const other = hpkeUnwrap(key, r.header, b64(r.encrypted_key), 'A128GCM', 32);
    expect(other).toHaveLength(32);
    expect(other.equals(cek)).toBe(false);
    const flipped = b64(r.encrypted_key);
    flipped[0] ^= 1;
    expect(hpkeUnwrap(key, r.header, flipped, 'A256GCM', 32).equals(cek)).toBe(false);
  });

  it('when an Integrated JWE is tampered with (header or ciphertext), then decryption-failed, the same for both', async () => {
    const { key } = generated('x25519-ml-kem-768', 'pq-target');
    const compact = integratedEncrypt(key, Buffer.from('x'));
    const parts = compact.split('.');
    const ct = b64(parts[3]);
    ct[0] ^= 1;
    const badCt = [parts[0], parts[1], '', ct.toString('base64url'), ''].join('.');
    const badHeader = [
      Buffer.from(JSON.stringify({ alg: 'HPKE-9', kid: 'pq-target#2' })).toString('base64url'),
      ...parts.slice(1),
    ].join('.');
    for (const bad of [badCt, badHeader])
      expect(await thrown(() => integratedDecrypt(key, bad))).toMatchObject({
        code: 'decryption_failed',
      });
  });
});

describe('HPKE JWE: a recipient list mixing classical and post-quantum keys', () => {
  const pq = { kid: 'pq', type: 'x25519-ml-kem-768' };
  const rsa = { kid: 'rsa', type: 'rsa-2048' };

  it('when the targets mix an X-Wing and an RSA key, then 422 jose-mixed-recipients naming both lists', async () => {
    expect(await thrown(() => recipientMix([pq, rsa], false))).toMatchObject({
      code: 'jose_mixed_recipients',
      slug: 'jose-mixed-recipients',
      status: 422,
      details: { postQuantum: ['pq'], classical: ['rsa'] },
    });
  });

  it('when the caller allows the mix, then the protected header records it; an unmixed list records nothing', () => {
    expect(recipientMix([pq, rsa], true)).toEqual({ keyward_mixed_recipients: true });
    expect(recipientMix([pq, { kid: 'pq2', type: 'ml-kem-1024' }], false)).toBeUndefined();
    expect(recipientMix([rsa], false)).toBeUndefined();
  });
});

describe('HPKE JWE: the runtime compact JWE of ML-KEM and X-Wing keys', () => {
  it.each([...HPKE_SUITES.keys()])(
    'when a %s key encrypts at runtime, then the compact JWE is Integrated Encryption naming the key version, the independent reader opens it, and decryptCompact too',
    async (type) => {
      const m = generateKeyMaterialSync(type);
      const key = loadKeyVersion(m, { kid: 'runtime-pq', version: 2, usage: 'encrypt' });
      const seed = m.secret ?? key.privateKey!.export({ format: 'raw-seed' });
      const message = Buffer.from('{"account":"12-345"}');
      const jwe = encryptCompact(key, message);
      const header = JSON.parse(b64(jwe.split('.')[0]).toString()) as Record<string, unknown>;
      expect(header).toEqual({
        alg: HPKE_SUITES.get(type)!.integrated,
        kid: 'runtime-pq#2',
        ver: 2,
      });
      expect((await openCompact(jwe, seed)).equals(message)).toBe(true);
      expect(decryptCompact(jwe, () => key).equals(message)).toBe(true);
      // A context bound at encryption must be given again.
      const bound = encryptCompact(key, message, { context: 'digest' });
      expect(decryptCompact(bound, () => key, 'digest').equals(message)).toBe(true);
      expect(await thrown(() => decryptCompact(bound, () => key))).toMatchObject({
        code: 'decryption_failed',
      });
    },
  );
});
