/**
 * ML-DSA in JOSE (RFC 9964): the RFC's example keys and thumbprints
 * (test/fixtures/pq/rfc9964-examples.json, from the examples/jose folder of the draft's
 * repository, cose-wg/draft-ietf-cose-dilithium at commit 7f2084b), and our JWS and AKP JWKs
 * checked with jose.
 */
import { createPrivateKey, createPublicKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { calculateJwkThumbprint, compactVerify, flattenedVerify, importJWK } from 'jose';
import type { JWK } from 'jose';
import {
  generateKeyMaterialSync,
  loadKeyObjects,
  publicJwk,
} from '../../../shared/crypto/material.ts';
import { algForKey, candidateAlgs, streamVerifier } from '../../../shared/jose/jws.ts';
import { SpooledJwsSigner } from '../../../shared/jose/spooled-jws.ts';
import { jwkThumbprint } from '../../../shared/jose/thumbprint.ts';
import type { ResolvedKey } from '../../../shared/jose/types.ts';

const EXAMPLES = JSON.parse(
  readFileSync(new URL('../../fixtures/pq/rfc9964-examples.json', import.meta.url), 'utf8'),
) as Record<string, { seedHex: string; jwk: JWK & { kid: string; pub: string }; jws: string }>;

describe('ML-DSA in JOSE: the examples of RFC 9964', () => {
  it.each(Object.entries(EXAMPLES))(
    "when the %s example key is derived from its seed, then pub is byte for byte the example, its kid is the thumbprint over alg, kty, pub (ours and jose's), and jose verifies the example JWS",
    async (alg, ex) => {
      const priv = createPrivateKey({
        key: Buffer.from(ex.seedHex, 'hex'),
        format: 'raw-seed',
        asymmetricKeyType: alg.toLowerCase() as 'ml-dsa-44',
      });
      const pub = createPublicKey(priv).export({ format: 'raw-public' });
      expect(pub.toString('base64url')).toBe(ex.jwk.pub);
      expect(jwkThumbprint(ex.jwk)).toBe(ex.jwk.kid);
      expect(await calculateJwkThumbprint(ex.jwk)).toBe(ex.jwk.kid);
      const { protectedHeader } = await compactVerify(
        ex.jws,
        await importJWK({ kty: 'AKP', alg, pub: ex.jwk.pub }, alg),
      );
      expect(protectedHeader.alg).toBe(alg);
    },
  );
});

describe('ML-DSA in JOSE: our keys and signatures', () => {
  it.each(['ml-dsa-44', 'ml-dsa-65', 'ml-dsa-87'] as const)(
    "when a %s key is published, then it is an AKP JWK with its RFC 9964 alg, jose imports it and our thumbprint is jose's",
    async (type) => {
      const jwk = publicJwk(generateKeyMaterialSync(type), { kid: 'k', usage: 'sign' });
      expect(jwk).toMatchObject({ kty: 'AKP', alg: type.toUpperCase(), use: 'sig' });
      expect(jwk).not.toHaveProperty('priv');
      await expect(importJWK(jwk as JWK, jwk.alg as string)).resolves.toBeDefined();
      expect(jwkThumbprint(jwk)).toBe(await calculateJwkThumbprint(jwk as JWK));
    },
  );

  it.each([true, false])(
    'when an ML-DSA-65 key re-signs streamed content (b64 %s), then jose verifies the detached JWS and our verifier too',
    async (b64) => {
      const l = loadKeyObjects(generateKeyMaterialSync('ml-dsa-65'));
      const key: ResolvedKey = {
        kid: 'archive',
        version: 3,
        type: 'ml-dsa-65',
        privateKey: l.privateKey,
        publicKey: l.publicKey,
      };
      const alg = algForKey(key, 'sha256', false);
      expect(alg).toBe('ML-DSA-65');
      expect(candidateAlgs(null, 'sha256', ['ml-dsa-65'])).toEqual(['ML-DSA-65']);
      const content = Buffer.from('Subject: archived\r\n\r\nsigned by an outside signer\r\n');
      const signer = new SpooledJwsSigner({ b64 });
      await signer.update(content.subarray(0, 10));
      await signer.update(content.subarray(10));
      const jws = (await signer.finish([{ key, alg }], {})) as {
        protected: string;
        signature: string;
      };
      const header = JSON.parse(Buffer.from(jws.protected, 'base64url').toString());
      expect(header).toMatchObject({ alg: 'ML-DSA-65', kid: 'archive#3' });
      const payload = b64 ? content.toString('base64url') : content;
      const r = await flattenedVerify({ ...jws, payload }, l.publicKey!);
      expect(Buffer.from(r.payload).equals(b64 ? content : content)).toBe(true);
      const v = streamVerifier('ML-DSA-65');
      v.update(Buffer.from(`${jws.protected}.`));
      v.update(Buffer.from(payload));
      expect(v.verify(l.publicKey!, Buffer.from(jws.signature, 'base64url'))).toBe(true);
      // Another parameter set's key never verifies it.
      const other = loadKeyObjects(generateKeyMaterialSync('ml-dsa-44')).publicKey!;
      expect(streamVerifier('ML-DSA-65').verify(other, Buffer.alloc(0))).toBe(false);
    },
  );
});
