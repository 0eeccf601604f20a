/**
 * Platform operations under /api/v3/admin/platform: the permission catalogue, force revocation,
 * the revoked-token view, on-demand signing-key rotation, the master keyring and the backup.
 *
 * Tests: test/integration/auth/revocation.test.ts, test/integration/auth/token.test.ts,
 *   test/integration/admin/master-key.test.ts,
 *   test/integration/admin/master-key-access-keys.test.ts, test/integration/http/readers.test.ts,
 *   test/integration/auth/token-abuse.test.ts, and 4 more under test/integration/
 */
import Type from 'typebox';
import { PERMISSIONS } from '../../../../shared/permissions.ts';
import { endpoint } from '../../../rows/endpoint.ts';
import { NullableString, NullableTime, PageOf, Resource } from '../../../schemas/common.ts';
import { forceRevoke, listRevokedTokens } from '../../../services/admin/revoked-tokens.ts';
import { masterKeyStatus, startRewrap } from '../../../services/platform/master-key.ts';
import { writeBackup } from '../../../services/platform/backup.ts';
import {
  ForceRevoke,
  JTI_EXAMPLE,
  RevokedToken,
  RevokedTokensQuery,
} from '../../../schemas/revoked-tokens.ts';

const AT = '2026-11-23T16:00:00.000Z';

const REWRAP_EXAMPLE = {
  state: 'done',
  targetId: 'k2026',
  startedAt: AT,
  finishedAt: '2026-11-23T16:00:04.000Z',
  rewrapped: 1207,
  raced: 0,
  unopenable: 0,
  error: null,
};
const RewrapProgress = Resource(
  {
    state: Type.Enum(['idle', 'running', 'done', 'failed', 'stopped']),
    targetId: Type.String(),
    startedAt: NullableTime(),
    finishedAt: NullableTime(),
    rewrapped: Type.Integer(),
    raced: Type.Integer({ description: 'items another instance re-sealed first' }),
    unopenable: Type.Integer(),
    error: NullableString(),
  },
  REWRAP_EXAMPLE,
);
const MasterKeyStatus = Resource(
  {
    keyring: Type.Array(
      Type.Object({ id: Type.String(), newest: Type.Boolean(), items: Type.Integer() }),
    ),
    unversioned: Type.Integer(),
    unknown: Type.Array(Type.Object({ id: Type.String(), items: Type.Integer() })),
    complete: Type.Boolean(),
    rewrap: RewrapProgress,
  },
  {
    keyring: [
      { id: 'k2026', newest: true, items: 1210 },
      { id: 'k2025', newest: false, items: 0 },
    ],
    unversioned: 0,
    unknown: [],
    complete: true,
    rewrap: REWRAP_EXAMPLE,
  },
);

const tag = 'platform';

/** Mounted at /api/v3/admin/platform (after authentication). */
export const PLATFORM_ENDPOINTS = [
  endpoint({
    method: 'get',
    path: '/scopes',
    operationId: 'listPermissions',
    tag,
    summary: 'The permission catalogue (82 strings)',
    access: { anyOf: ['admin.platform.scopes.read'] },
    answer: {
      status: 200,
      description: 'permissions',
      schema: Resource(
        { items: Type.Array(Type.String()), total: Type.Integer() },
        {
          items: [
            'admin.keys.create',
            'admin.keys.read',
            'crypto.decrypt',
            'crypto.encrypt',
            '...',
          ],
          total: 82,
        },
      ),
    },
    handle: () => ({ items: PERMISSIONS, total: PERMISSIONS.length }),
  }),
  endpoint({
    method: 'post',
    path: '/tokens/revoke',
    operationId: 'revokeAnyToken',
    tag,
    summary: 'Force-revoke any token, by jti or by the token itself',
    description:
      "A token names its tenant, subject and expiry (an invalid one revokes nothing: `revoked` false); a bare jti is kept for the longest lifetime a token can have. Audited as `platform.token.force-revoke` in the caller's tenant.",
    access: { anyOf: ['admin.platform.tokens.revoke'] },
    body: ForceRevoke,
    answer: {
      status: 200,
      description: 'whether a token was revoked',
      schema: Resource(
        { revoked: Type.Boolean(), jti: NullableString() },
        { revoked: true, jti: JTI_EXAMPLE },
      ),
    },
    problems: { 400: 'validation-failed: neither `jti` nor `token`, or a jti that is not one' },
    handle: (ctx, { body, actor, claims }) =>
      forceRevoke(ctx, body, { actor, tenantId: claims.tenantId }),
  }),
  endpoint({
    method: 'get',
    path: '/tokens/revoked',
    operationId: 'listRevokedTokens',
    tag,
    summary: 'Revoked tokens not yet expired',
    access: { anyOf: ['admin.platform.tokens.read'] },
    query: RevokedTokensQuery,
    answer: { status: 200, description: 'revoked tokens', schema: PageOf(RevokedToken) },
    problems: {
      400: 'validation-failed: a limit that is not an integer, or a cursor no page gave',
    },
    handle: (ctx, { query }) => listRevokedTokens(ctx, query),
  }),
  endpoint({
    method: 'post',
    path: '/signing-keys/rotate',
    operationId: 'rotateSigningKey',
    tag,
    summary: 'Rotate the token signing key now',
    access: { anyOf: ['admin.platform.signing-keys.rotate'] },
    answer: {
      status: 201,
      description: 'the new signing key id',
      schema: Resource({ kid: Type.String() }, { kid: 'sk-2026-11-23' }),
    },
    handle: async (ctx) => ({
      kid: await ctx.auth.signingKeys.rotate(ctx.auth.maxTokenLifetime),
    }),
    audit: { action: 'platform.signing-key.rotate', target: (_input, { kid }) => kid },
  }),
  // The master keyring. The catalogue stays the spec's 82 permissions: the signing-key
  // pair already means "the platform's root key material", which the master key is the root of.
  endpoint({
    method: 'get',
    path: '/master-key',
    operationId: 'getMasterKeyStatus',
    tag,
    summary:
      "The master keyring's ids, the sealed items each still seals, and this instance's rewrap",
    description:
      'An id whose `items` is 0 (and `complete` true) may be removed from KEYWARD_MASTER_KEY. `unversioned` counts items sealed before the keyring existed; `unknown` lists ids the database names that this instance does not hold.',
    access: { anyOf: ['admin.platform.signing-keys.read'] },
    answer: { status: 200, description: 'the keyring status', schema: MasterKeyStatus },
    handle: (ctx) => masterKeyStatus(ctx),
  }),
  endpoint({
    method: 'post',
    path: '/master-key/rewrap',
    operationId: 'rewrapMasterKey',
    tag,
    summary: 'Re-seal every sealed item under the newest master key, in the background',
    description:
      'Idempotent: answers the running rewrap when one runs on this instance. Each item is rewritten with a compare-and-set on its old blob, so an interrupted run leaves every item readable and a second run (or another instance) finishes the rest. Audited as `platform.master-key.rewrap-start` and `platform.master-key.rewrap`.',
    access: { anyOf: ['admin.platform.signing-keys.rotate'] },
    answer: { status: 202, description: 'the rewrap progress', schema: RewrapProgress },
    // The service audits the start, and the end when the run finishes.
    handle: (ctx, { claims, actor }) => startRewrap(ctx, claims.tenantId, actor),
  }),
  // Every tenant's data, so the cross-tenant permission; the CLI encrypts it.
  endpoint({
    method: 'get',
    path: '/backup',
    operationId: 'backupPlatform',
    tag,
    summary: 'A consistent snapshot of every table, streamed (what `keyward backup` encrypts)',
    description:
      'One REPEATABLE READ transaction, streamed in constant memory as NDJSON: a header line naming the schema (`migrations`), then per table a `table` line, one `{"r": row}` line per row and an `end` line with the count, and a last `done` line. Key material stays sealed under the master keyring, which is never in it. Use `keyward backup --out FILE`, which encrypts it under a passphrase as it writes.',
    access: { anyOf: ['admin.platform.cross-tenant'] },
    answer: {
      status: 200,
      description: 'the snapshot',
      media: 'application/x-ndjson',
      schema: Type.String(),
    },
    handle: (ctx, { res }) => {
      res.setHeader('content-type', 'application/x-ndjson');
      res.setHeader('cache-control', 'no-store');
      return writeBackup(ctx, res);
    },
    audit: {
      action: 'platform.backup',
      target: () => null,
      details: (_input, counts) => ({
        rows: Object.values(counts).reduce((a, b) => a + b, 0),
      }),
    },
  }),
];
