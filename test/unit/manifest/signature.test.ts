/**
 * The manifest's signature: made through the archive signing key's signer for each family of
 * signing key and checked by jose (an independent implementation); refused by the manifest's
 * verifier when the header lacks the manifest typ (a JWS the archive key made while re-signing
 * converted content), when the JWK Set's key of that kid is another or for another alg, and
 * refused to build for a tenant without an archive signing key.
 */
import { type JsonWebKey } from 'node:crypto';
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { archiveManifestSigner, buildManifest } from '../../../shared/manifest/manifest.ts';
import { MANIFEST_TYP } from '../../../shared/manifest/payload.ts';
import { verifyManifestSignature } from '../../../shared/manifest/verify.ts';
import type { LedgerRow } from '../../../shared/manifest/row.ts';
import type { KeyType } from '../../../shared/crypto/registry.ts';
import { asRsaKey } from '../../../shared/crypto/rsa-pss.ts';
import { keyOf } from '../crypto/helpers.ts';

const rows: LedgerRow[] = ['a', 'b', 'c'].map((k, i) => ({
  sourceKey: k,
  inputSize: i,
  inputSha256: '0'.repeat(64),
  form: 'signed-data',
  outcome: 'converted',
  outputs: [],
  keys: [],
  signers: [],
  attempts: 1,
}));
async function* stream<T>(items: T[]): AsyncGenerator<T> {
  for (const x of items) yield x;
}
const params = {
  migration: 'm-1',
  tenant: 't-1',
  parameters: { source: 's/', outputPrefix: 'o/', targets: [], signer: null },
};

async function archiveKey(type: KeyType) {
  const key = await keyOf(type, 'sign', 'archive-key', 3);
  const signer = await archiveManifestSigner({
    archiveSigningKey: async () => ({
      kid: key.kid,
      version: key.version,
      type: key.type,
      privateKey: key.privateKey,
      publicKey: key.publicKey,
    }),
  });
  // As the tenant's public view writes it: an RSASSA-PSS key as an RSA JWK (RFC 7518 section 6.3).
  const jwk = {
    ...asRsaKey(key.publicKey!).export({ format: 'jwk' }),
    kid: 'archive-key#3',
  } as JsonWebKey;
  return { key, signer, jwks: { keys: [jwk] } };
}

it.each([
  ['rsa-2048', 'RS256'],
  ['rsa-pss-2048', 'PS256'],
  ['ec-p384', 'ES384'],
  ['ed25519', 'EdDSA'],
] as const)(
  'when a %s archive key signs a manifest, then jose verifies it as %s with the typ',
  async (type, alg) => {
    const { signer, jwks } = await archiveKey(type);
    const { jws, root, size } = await buildManifest(stream(rows), params, signer);
    expect(decodeProtectedHeader(jws)).toEqual({ alg, kid: 'archive-key#3', typ: MANIFEST_TYP });
    const { payload } = await jwtVerify(jws, createLocalJWKSet(jwks as never), {
      typ: MANIFEST_TYP,
    });
    expect(payload).toMatchObject({
      tree: { root, size: 3 },
      counts: { total: 3, converted: 3, refused: 0 },
    });
    expect(size).toBe(3);
    expect(verifyManifestSignature(jws, jwks)).toMatchObject({ tree: { root } });
  },
);

it('when the archive key signed the same claims without the manifest typ, then the verifier refuses it though the signature is good', async () => {
  const { signer, jwks } = await archiveKey('ec-p256');
  const { payload } = await buildManifest(stream(rows), params, signer);
  // The header of a JWS the converter writes: alg and kid, no typ.
  const input = `${Buffer.from(JSON.stringify({ alg: signer.alg, kid: signer.kid })).toString('base64url')}.${Buffer.from(JSON.stringify(payload)).toString('base64url')}`;
  const untyped = `${input}.${(await signer.sign(Buffer.from(input))).toString('base64url')}`;
  await expect(jwtVerify(untyped, createLocalJWKSet(jwks as never))).resolves.toBeDefined();
  expect(verifyManifestSignature(untyped, jwks)).toBe(`the JWS typ is not ${MANIFEST_TYP}`);
});

it('when the JWK Set has another key of that kid, or the key for another alg, then the verifier refuses the manifest', async () => {
  const { signer, jwks } = await archiveKey('ec-p256');
  const { jws } = await buildManifest(stream(rows), params, signer);
  const other = await archiveKey('ec-p384');
  expect(verifyManifestSignature(jws, other.jwks)).toBe(
    'the signature does not verify with key archive-key#3',
  );
  expect(verifyManifestSignature(jws, { keys: [{ ...jwks.keys[0], alg: 'ES384' }] })).toBe(
    'key archive-key#3 is not a ES256 signing key',
  );
  expect(verifyManifestSignature(jws, { keys: [] })).toBe('the JWK Set has no key archive-key#3');
  const [h, p, s] = jws.split('.');
  const flipped = Buffer.from(p, 'base64url');
  flipped[5] ^= 1;
  expect(verifyManifestSignature(`${h}.${flipped.toString('base64url')}.${s}`, jwks)).toMatch(
    /does not verify/,
  );
});

it('when the tenant has no archive signing key, then no manifest is signed (422 naming the setting)', async () => {
  await expect(
    archiveManifestSigner({ archiveSigningKey: async () => null }),
  ).rejects.toMatchObject({
    code: 'unprocessable',
    message: expect.stringContaining('archiveSigning'),
  });
});
