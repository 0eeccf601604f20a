/**
 * OpenAPI paths of the PQC API (contract 3): the tenant's post-quantum keys, ML-KEM and X-Wing
 * (X25519 + ML-KEM-768) encapsulation, ML-DSA and SLH-DSA signatures. Every path needs a
 * `service-core` bearer token and works on the token's tenant only; a key of another type is
 * key-usage-mismatch (use /api/v3/crypto). Each operation takes a single request or a batch
 * `{items: [...]}` like the Core API. Unknown JSON members answer 400 naming the member.
 */
import { PAGE_PARAMETERS, jsonResponse, pageOf, problems } from './components.ts';
import { COMMON, RUNTIME_OPERATIONS, base64, int, kid, obj, operation, str } from './crypto.ts';
import { KeyView } from './crypto-keys.ts';

const KEY = {
  404: "key-not-found: no such kid in the token's tenant",
  409: 'key-suspended or key-revoked: the key is not active',
  422: "key-usage-mismatch: not a post-quantum key, or not one of this operation's families",
};
const PQC_KEY = {
  ...KeyView,
  examples: [
    {
      ...(KeyView.examples as Array<Record<string, unknown>>)[0],
      kid: 'pq-exchange',
      type: 'ml-kem-768',
      currentVersion: 1,
    },
  ],
};
// Real ML-KEM ciphertexts (1088 or 1568 bytes, 1120 for X-Wing) and ML-DSA signatures (2420 to 4627 bytes) are long; the examples are shortened.
const KEM_CT = 'p3V0cXVhbnR1bS1rZW0tY2lwaGVydGV4dC1zaG9ydGVuZWQ=';
const SECRET = 'b3Ia9C1mR0Jx4wq6yF2k8Nf0Hq3u5Zp7Vv1Lr9s2TtE=';
const PQ_SIG = 'bWwtZHNhLTY1LXNpZ25hdHVyZS1zaG9ydGVuZWQ=';

export const pqcPaths = {
  '/api/v3/pqc/keys': {
    get: {
      tags: ['pqc'],
      operationId: 'listPqcKeys',
      summary: "The tenant's usable post-quantum keys (ML-KEM, ML-DSA, SLH-DSA, X-Wing)",
      description:
        'Requires `pqc.keys.read`. Active and suspended keys, by kid; metadata and the current public JWK (AKP) only.',
      parameters: PAGE_PARAMETERS,
      responses: {
        200: jsonResponse('a page of keys', pageOf(PQC_KEY)),
        ...problems({
          400: 'validation-failed: a bad limit or cursor',
          401: COMMON[401],
          403: COMMON[403],
          429: COMMON[429],
        }),
      },
    },
  },
  '/api/v3/pqc/encapsulate': operation({
    id: 'pqcEncapsulate',
    tag: 'pqc',
    summary: "Encapsulate a fresh shared secret to the key's current version (ML-KEM, X-Wing)",
    permission: '`pqc.encapsulate`',
    description:
      "Key types ml-kem-768, ml-kem-1024 (FIPS 203) and x25519-ml-kem-768 (X-Wing). The shared secret is 32 bytes; send the ciphertext to the key's holder, who decapsulates it.",
    request: obj({ kid }),
    response: obj({
      kid: str,
      version: int,
      ciphertext: base64('the KEM ciphertext'),
      sharedSecret: base64('the 32-byte shared secret'),
    }),
    example: { kid: 'pq-exchange' },
    answer: { kid: 'pq-exchange', version: 1, ciphertext: KEM_CT, sharedSecret: SECRET },
    problems: { 400: 'validation-failed: kid missing or an unknown member', ...KEY },
  }),
  '/api/v3/pqc/decapsulate': operation({
    id: 'pqcDecapsulate',
    tag: 'pqc',
    summary:
      "Recover the shared secret of a KEM ciphertext with the key's current version, or the one named",
    permission: '`pqc.decapsulate`',
    description:
      'ML-KEM decapsulation is implicit-rejection: a tampered ciphertext yields an unrelated secret, not an error. Versions below minDecryptionVersion answer key-version-retired.',
    request: obj(
      {
        kid,
        ciphertext: base64('the KEM ciphertext'),
        version: { ...int, description: 'the version encapsulated to; default the current one' },
      },
      ['kid', 'ciphertext'],
    ),
    response: obj({ kid: str, version: int, sharedSecret: base64('the 32-byte shared secret') }),
    example: { kid: 'pq-exchange', ciphertext: KEM_CT },
    answer: { kid: 'pq-exchange', version: 1, sharedSecret: SECRET },
    problems: {
      400: 'validation-failed: bad base64, a ciphertext of the wrong length, a version the key does not have, or an unknown member',
      ...KEY,
      409: 'key-suspended, key-revoked or key-version-retired',
    },
  }),
  '/api/v3/pqc/sign': operation({
    ...RUNTIME_OPERATIONS.sign,
    id: 'pqcSign',
    tag: 'pqc',
    summary: 'Sign with an ML-DSA (FIPS 204) or SLH-DSA (FIPS 205) key',
    permission: '`pqc.sign`',
    description:
      "As /api/v3/crypto/sign, for post-quantum keys: `algorithm` defaults to the key's (ML-DSA-65, SLH-DSA-SHA2-128s...).",
    example: { kid: 'pq-signing', data: 'YXR0YWNrIGF0IGRhd24=' },
    answer: { kid: 'pq-signing', version: 1, algorithm: 'ML-DSA-65', signature: PQ_SIG },
    problems: {
      400: 'validation-failed: neither or both of data and digest, an unknown algorithm or member',
      ...KEY,
    },
  }),
  '/api/v3/pqc/verify': operation({
    ...RUNTIME_OPERATIONS.verify,
    id: 'pqcVerify',
    tag: 'pqc',
    summary:
      'Verify an ML-DSA or SLH-DSA signature with any retained version (newest first), or the one named',
    permission: '`pqc.verify`',
    description:
      'As /api/v3/crypto/verify: a wrong signature is `valid: false` (200), not a problem.',
    example: { kid: 'pq-signing', data: 'YXR0YWNrIGF0IGRhd24=', signature: PQ_SIG },
    answer: { kid: 'pq-signing', version: 1, valid: true },
    problems: {
      400: 'validation-failed: bad base64, neither or both of data and digest, an unknown member',
      ...KEY,
      409: 'key-suspended, key-revoked or key-version-retired',
    },
  }),
};
