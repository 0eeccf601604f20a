/**
 * GET /api/v3/crypto/keys and /keys/{kid}: the tenant's usable keys and a key's public versions.
 *
 * Tests: test/integration/auth/subject-revocation.test.ts,
 *   test/integration/auth/token-abuse.test.ts, test/integration/core/crypto.test.ts,
 *   test/integration/core/kms-mac-public.test.ts, test/integration/auth/client-secret-basic.test.ts,
 *   test/integration/auth/token.test.ts, and 3 more under test/integration/
 */
import Type from 'typebox';
import { endpoint } from '../../../rows/endpoint.ts';
import { pageRequest } from '../../../rows/pagination.ts';
import { KeyView, PublicKeys } from '../../../schemas/keys.ts';
import { PageOf, PageQuery } from '../../../schemas/common.ts';
import { publicKeysOf } from '../../../services/keys/public-view.ts';
import { listUsableKeys } from '../../../services/key-lists.ts';

const tag = 'crypto';
const access = { anyOf: ['crypto.keys.read'] } as const;
/** Both spend one rate-limit budget per client. */
const budget = 'crypto.keys';
const COMMON = { 403: 'the role lacks the permission' };

/** Mounted at /api/v3/crypto/keys (after service-core authentication); the token's tenant. */
export const CRYPTO_KEY_ENDPOINTS = [
  endpoint({
    method: 'get',
    path: '/',
    operationId: 'listUsableKeys',
    tag,
    summary: "The tenant's usable keys (active and suspended), by kid",
    description:
      "The token's tenant. Metadata only; revoked and archived keys are left out because nothing at runtime can use them.",
    access,
    budget,
    query: PageQuery,
    answer: { status: 200, description: 'a page of keys', schema: PageOf(KeyView) },
    problems: { 400: 'validation-failed: a bad limit or cursor', ...COMMON },
    // Usable keys only: archived and revoked keys cannot be used at runtime.
    handle: (ctx, { claims, query }) => listUsableKeys(ctx.db, claims.tenantId, pageRequest(query)),
  }),
  endpoint({
    method: 'get',
    path: '/:kid',
    operationId: 'getPublicKeys',
    tag,
    summary: "Every retained version's public key, as JWK and PEM",
    description:
      "The token's tenant. Active and suspended keys; a revoked or archived key answers key-revoked, like any runtime use.",
    access,
    budget,
    // No pattern: a kid no key can have is key-not-found, by the key cache's one rule.
    params: Type.Object({
      kid: Type.String({
        description: 'the key identifier, as created (1 to 128 of A-Z a-z 0-9 . _ : -)',
        examples: ['release-signing'],
      }),
    }),
    answer: { status: 200, description: 'the public keys', schema: PublicKeys },
    problems: {
      404: "key-not-found: no such kid in the token's tenant",
      409: 'key-revoked: the key is revoked or archived',
      422: 'key-usage-mismatch: a symmetric key (AES, HMAC) has no public key',
      ...COMMON,
    },
    // Every retained version's public key, for verifiers outside the service.
    handle: (ctx, { claims, params }) =>
      publicKeysOf(ctx, claims.tenantId, params.kid, { runtime: true }),
  }),
];
