/**
 * The PQC API: ML-KEM and X-Wing hybrid (X25519 + ML-KEM-768) encapsulation,
 * ML-DSA and SLH-DSA signatures, on Node 24's native implementations.
 *
 * Tests: test/integration/core/crypto.test.ts
 */
import { endpoint } from '../../http/endpoint.ts';
import { pageRequest } from '../../http/pagination.ts';
import { PageOf, PageQuery, Resource } from '../../http/schemas.ts';
import { KEY_VIEW, VIEW_EXAMPLE } from '../../http/key-schemas.ts';
import type { RuntimeRoute } from '../../http/runtime-route.ts';
import {
  RUNTIME_OPERATIONS,
  base64,
  int,
  obj,
  str,
  type OperationDoc,
} from '../../http/runtime-contract.ts';
import { listPqcKeys } from '../../services/key-lists.ts';
import { PQC_OPERATIONS } from '../../services/crypto/pqc.ts';

const KEY: OperationDoc['problems'] = {
  404: "key-not-found: no such kid in the token's tenant",
  409: 'key-suspended or key-revoked: the key is not active',
  422: "key-usage-mismatch: not a post-quantum key, or not one of this operation's families",
};
// Real ML-KEM ciphertexts (1088 or 1568 bytes, 1120 for X-Wing) and ML-DSA signatures (2420 to 4627 bytes) are long; the examples are shortened.
const KEM_CT = 'p3V0cXVhbnR1bS1rZW0tY2lwaGVydGV4dC1zaG9ydGVuZWQ=';
const SECRET = 'b3Ia9C1mR0Jx4wq6yF2k8Nf0Hq3u5Zp7Vv1Lr9s2TtE=';
const PQ_SIG = 'bWwtZHNhLTY1LXNpZ25hdHVyZS1zaG9ydGVuZWQ=';

/** The contract of each PQC operation (the OpenAPI operation is generated from it). */
const DOCS: Record<string, OperationDoc> = {
  encapsulate: {
    id: 'pqcEncapsulate',
    tag: 'pqc',
    summary: "Encapsulate a fresh shared secret to the key's current version (ML-KEM, X-Wing)",
    permission: '`pqc.encapsulate`',
    description:
      "Key types ml-kem-768, ml-kem-1024 (FIPS 203) and x25519-ml-kem-768 (X-Wing). The shared secret is 32 bytes; send the ciphertext to the key's holder, who decapsulates it.",
    response: obj({
      kid: str,
      version: int,
      ciphertext: base64('the KEM ciphertext'),
      sharedSecret: base64('the 32-byte shared secret'),
    }),
    example: { kid: 'pq-exchange' },
    answer: { kid: 'pq-exchange', version: 1, ciphertext: KEM_CT, sharedSecret: SECRET },
    problems: { 400: 'validation-failed: kid missing or an unknown member', ...KEY },
  },
  decapsulate: {
    id: 'pqcDecapsulate',
    tag: 'pqc',
    summary:
      "Recover the shared secret of a KEM ciphertext with the key's current version, or the one named",
    permission: '`pqc.decapsulate`',
    description:
      'ML-KEM decapsulation is implicit-rejection: a tampered ciphertext yields an unrelated secret, not an error. Versions below minDecryptionVersion answer key-version-retired.',
    response: obj({ kid: str, version: int, sharedSecret: base64('the 32-byte shared secret') }),
    example: { kid: 'pq-exchange', ciphertext: KEM_CT },
    answer: { kid: 'pq-exchange', version: 1, sharedSecret: SECRET },
    problems: {
      400: 'validation-failed: bad base64, a ciphertext of the wrong length, a version the key does not have, or an unknown member',
      ...KEY,
      409: 'key-suspended, key-revoked or key-version-retired',
    },
  },
  sign: {
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
  },
  verify: {
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
  },
};

/** The PQC operations, served by Express behind the area's bearer check (route table `runtime`). */
export const PQC_RUNTIME: readonly RuntimeRoute[] = PQC_OPERATIONS.map(
  ([name, permission, body, op]) => ({
    path: `/${name}`,
    permissions: [permission],
    action: `pqc.${name}`,
    body,
    op,
    doc: DOCS[name],
  }),
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
    summary: "The tenant's usable post-quantum keys (ML-KEM, ML-DSA, SLH-DSA, X-Wing)",
    description:
      'Active and suspended keys, by kid; metadata and the current public JWK (AKP) only.',
    access: { anyOf: ['pqc.keys.read'] },
    query: PageQuery,
    answer: { status: 200, description: 'a page of keys', schema: PageOf(PqcKey) },
    handle: (ctx, { claims, query }) => listPqcKeys(ctx.db, claims.tenantId, pageRequest(query)),
  }),
];
