/**
 * The PQC API: ML-KEM and ML-KEM hybrid (X-Wing, ML-KEM + P-256 / P-384) encapsulation,
 * ML-DSA and SLH-DSA signatures, on Node 24's native implementations.
 *
 * Tests: test/integration/core/crypto.test.ts
 */
import { endpoint } from '../../rows/endpoint.ts';
import { pageRequest } from '../../rows/pagination.ts';
import { PageOf, PageQuery, Resource } from '../../schemas/common.ts';
import { KEY_VIEW, VIEW_EXAMPLE } from '../../schemas/keys.ts';
import {
  Answer,
  Base64Answer,
  OPERATIONS,
  Str,
  VersionAnswer,
  operationRow,
  type OperationContract,
} from '../shared/operations.ts';
import { listPqcKeys } from '../../services/key-lists.ts';
import { PQC_OPERATIONS } from '../../services/crypto/pqc.ts';
import { DecapsulateBody, EncapsulateBody } from '../../services/crypto/bodies.ts';

const KEY = {
  404: "key-not-found: no such kid in the token's tenant",
  409: 'key-suspended or key-revoked: the key is not active',
  422: "key-usage-mismatch: not a post-quantum key, or not one of this operation's families",
};
// Real ML-KEM ciphertexts (1088 or 1568 bytes; 1120, 1153, 1665 for the hybrids) and ML-DSA signatures (2420 to 4627 bytes) are long; the examples are shortened.
const KEM_CT = 'p3V0cXVhbnR1bS1rZW0tY2lwaGVydGV4dC1zaG9ydGVuZWQ=';
const SECRET = 'b3Ia9C1mR0Jx4wq6yF2k8Nf0Hq3u5Zp7Vv1Lr9s2TtE=';
const PQ_SIG = 'bWwtZHNhLTY1LXNpZ25hdHVyZS1zaG9ydGVuZWQ=';

/** What each PQC operation takes, answers and may refuse, with its operation id. */
const CONTRACTS: Record<string, OperationContract & { operationId: string }> = {
  encapsulate: {
    operationId: 'pqcEncapsulate',
    summary:
      "Encapsulate a fresh shared secret to the key's current version (ML-KEM, ML-KEM hybrids)",
    description:
      "Key types ml-kem-768, ml-kem-1024 (FIPS 203) x25519-ml-kem-768 (X-Wing), p256-ml-kem-768 and p384-ml-kem-1024 (ML-KEM with P-256 / P-384). The shared secret is 32 bytes; send the ciphertext to the key's holder, who decapsulates it.",
    body: EncapsulateBody,
    answer: Answer({
      kid: Str(),
      version: VersionAnswer(),
      ciphertext: Base64Answer('the KEM ciphertext'),
      sharedSecret: Base64Answer('the 32-byte shared secret'),
    }),
    examples: {
      request: { kid: 'pq-exchange' },
      answer: { kid: 'pq-exchange', version: 1, ciphertext: KEM_CT, sharedSecret: SECRET },
    },
    problems: { 400: 'validation-failed: kid missing or an unknown member', ...KEY },
  },
  decapsulate: {
    operationId: 'pqcDecapsulate',
    summary:
      "Recover the shared secret of a KEM ciphertext with the key's current version, or the one named",
    description:
      'ML-KEM decapsulation is implicit-rejection: a tampered ciphertext yields an unrelated secret, not an error. Versions below minDecryptionVersion answer key-version-retired.',
    body: DecapsulateBody,
    answer: Answer({
      kid: Str(),
      version: VersionAnswer(),
      sharedSecret: Base64Answer('the 32-byte shared secret'),
    }),
    examples: {
      request: { kid: 'pq-exchange', ciphertext: KEM_CT },
      answer: { kid: 'pq-exchange', version: 1, sharedSecret: SECRET },
    },
    problems: {
      400: 'validation-failed: bad base64, a ciphertext of the wrong length, a version the key does not have, or an unknown member',
      ...KEY,
      409: 'key-suspended, key-revoked or key-version-retired',
    },
  },
  sign: {
    ...OPERATIONS.sign,
    operationId: 'pqcSign',
    summary: 'Sign with an ML-DSA (FIPS 204) or SLH-DSA (FIPS 205) key',
    description:
      "As /api/v3/crypto/sign, for post-quantum keys: `algorithm` defaults to the key's (ML-DSA-65, SLH-DSA-SHA2-128s...).",
    examples: {
      request: { kid: 'pq-signing', data: 'YXR0YWNrIGF0IGRhd24=' },
      answer: { kid: 'pq-signing', version: 1, algorithm: 'ML-DSA-65', signature: PQ_SIG },
    },
    problems: {
      400: 'validation-failed: neither or both of data and digest, an unknown algorithm or member',
      ...KEY,
    },
  },
  verify: {
    ...OPERATIONS.verify,
    operationId: 'pqcVerify',
    summary:
      'Verify an ML-DSA or SLH-DSA signature with any retained version (newest first), or the one named',
    description:
      'As /api/v3/crypto/verify: a wrong signature is `valid: false` (200), not a problem; `jws` verifies a compact JWS (ML-DSA-*, SLH-DSA-*) instead of `data` and `signature`.',
    examples: {
      request: { kid: 'pq-signing', data: 'YXR0YWNrIGF0IGRhd24=', signature: PQ_SIG },
      answer: { kid: 'pq-signing', version: 1, valid: true },
    },
    problems: {
      400: 'validation-failed: bad base64, neither or both of data and digest, no signature, an unknown member; a jws that is not a compact JWS naming alg, or jws with data, digest, signature or algorithm',
      ...KEY,
      409: 'key-suspended, key-revoked or key-version-retired',
    },
  },
};

/** The PQC operations, served by Express behind the area's bearer check; each body is the service table's. */
export const PQC_RUNTIME = PQC_OPERATIONS.map(([name, permission, body, run]) =>
  operationRow(
    { ...CONTRACTS[name], body },
    {
      path: `/${name}`,
      operationId: CONTRACTS[name].operationId,
      tag: 'pqc',
      access: { allOf: [permission] },
      budget: `pqc.${name}`,
      run,
    },
  ),
);

const PqcKey = Resource(KEY_VIEW, {
  ...VIEW_EXAMPLE,
  kid: 'pq-exchange',
  type: 'ml-kem-768',
  currentVersion: 1,
});

/** The key list, mounted at /api/v3/pqc (after service-core authentication). */
export const PQC_KEY_ENDPOINTS = [
  endpoint({
    method: 'get',
    path: '/keys',
    operationId: 'listPqcKeys',
    tag: 'pqc',
    summary: "The tenant's usable post-quantum keys (ML-KEM, ML-DSA, SLH-DSA, ML-KEM hybrids)",
    description:
      'Active and suspended keys, by kid; metadata and the current public JWK (AKP) only.',
    access: { anyOf: ['pqc.keys.read'] },
    query: PageQuery,
    answer: { status: 200, description: 'a page of keys', schema: PageOf(PqcKey) },
    handle: (ctx, { claims, query }) => listPqcKeys(ctx.db, claims.tenantId, pageRequest(query)),
  }),
];
