/**
 * Admin key routes: create, list, read, change settings, rotate, suspend, resume,
 * revoke, archive and public keys, as route rows (bulk orchestration: keys/orchestrate.ts;
 * keystore import: keys/import-keystore.ts). Never returns private material.
 *
 * Tests: test/integration/auth/token-lifetime.test.ts, test/integration/admin/master-key.test.ts,
 *   test/integration/migration/outside-signers.test.ts,
 *   test/integration/observability/metrics.test.ts, test/integration/admin/key-settings.test.ts,
 *   test/integration/admin/keys.test.ts, and 25 more under test/e2e/, test/integration/
 */
import Type from 'typebox';
import { endpoint } from '../../../../rows/endpoint.ts';
import { pageRequest } from '../../../../rows/pagination.ts';
import {
  Body,
  PageOf,
  PAGE_QUERY,
  Resource,
  TENANT_PARAM,
  Time,
} from '../../../../schemas/common.ts';
import { CertificateView, KeyRecord, PublicKeys } from '../../../../schemas/keys.ts';
import type { ExpensiveDeclaration } from '../../../../../shared/keys/work-budget.ts';
import { changeKey, createKey, readKey } from '../../../../services/keys/store.ts';
import { MAX_ROTATION_PERIOD_DAYS, applySettings } from '../../../../services/keys/settings.ts';
import { tenantPolicy } from '../../../../services/policies.ts';
import { listAdminKeys } from '../../../../services/key-lists.ts';
import { publicKeysOf } from '../../../../services/keys/public-view.ts';
import { KEY_STATES, type KeyAction } from '../../../../../shared/keys/lifecycle.ts';
import { KID } from '../../../../../shared/ids.ts';

const AT = '2026-11-23T16:00:00.000Z';

const USAGES = ['encrypt', 'sign', 'mac', 'verify'] as const;
const Usage = () => Type.Enum([...USAGES]);
const KidText = (description?: string) =>
  Type.String({ pattern: KID.source, ...(description ? { description } : {}) });
const RotationPeriod = () => Type.Integer({ minimum: 1, maximum: MAX_ROTATION_PERIOD_DAYS });
const MAX_DESCRIPTION = 500;

/** A key's record with the versions it holds (services/keys/store.ts readKey). */
const KeyDetail = Resource(
  {
    ...KeyRecord.properties,
    versions: Type.Array(
      Type.Object({
        version: Type.Integer(),
        createdAt: Time(),
        hasCertificate: Type.Boolean(),
        certificate: Type.Union([CertificateView, Type.Null()], {
          description:
            "the version's own certificate (an imported key): subject, issuer, serial and validity",
        }),
      }),
    ),
  },
  {
    ...(KeyRecord as { examples?: object[] }).examples?.[0],
    versions: [1, 2, 3].map((version) => ({
      version,
      createdAt: AT,
      hasCertificate: false,
      certificate: null,
    })),
  },
);

const KeySettings = Type.Object(
  {
    description: Type.Optional(
      Type.Union([Type.String({ maxLength: MAX_DESCRIPTION }), Type.Null()], {
        description: 'null clears it',
      }),
    ),
    rotationPeriodDays: Type.Optional(
      Type.Union([RotationPeriod(), Type.Null()], {
        description:
          "the key's own period; null follows the tenant's effective policy. Reschedules the key from its last rotation, so a shorter period can make it due at once. Generated keys only (409 otherwise)",
      }),
    ),
    minDecryptionVersion: Type.Optional(
      Type.Integer({ minimum: 1, description: 'at most the current version' }),
    ),
    archiveSigning: Type.Optional(
      Type.Boolean({
        description:
          "true makes this active signing key the tenant's archive signing key (the key that held it loses it, in the same transaction); 409 invalid-transition for a key that is not an active sign key",
      }),
    ),
    trustAnchor: Type.Optional(
      Type.Boolean({
        description: 'verify-only keys: a trust anchor for verify: chain (409 for other keys)',
      }),
    ),
    usages: Type.Optional(
      Type.Array(Usage(), {
        minItems: 1,
        uniqueItems: true,
        description:
          'the usages to enable: narrows the key (the next operation, analyze and conversion follow it), or widens it back within allowedUsages, never past them: 422 key-usage-mismatch naming the field and the allowed usages; 400 for an empty list or an unknown usage; 409 conflict when another key of the tenant holds the same certificate for that usage (naming its kid), or invalid-transition when the archive signing key would lose sign',
      }),
    ),
  },
  {
    additionalProperties: false,
    minProperties: 1,
    examples: [{ description: 'orders database column encryption', rotationPeriodDays: 90 }],
  },
);

const Tenant = Type.Object(TENANT_PARAM);
const KEY_PARAM = {
  // Not held to the kid rule here: a kid no key can have is key-not-found, by the key cache's rule.
  kid: Type.String({ description: 'the key identifier', examples: ['orders-db'] }),
};
const KeyPath = Type.Object({ ...TENANT_PARAM, ...KEY_PARAM });
const tag = 'keys';
const NO_KEY = 'key-not-found: no such kid in this tenant';

/** One lifecycle action of one key: the row of POST /:kid/{action}. */
function lifecycleRow(
  action: KeyAction,
  access: readonly [string, ...string[]],
  summary: string,
  conflict: string,
  expensive?: ExpensiveDeclaration,
) {
  return endpoint({
    method: 'post',
    path: `/:kid/${action}`,
    operationId: `${action}Key`,
    tag,
    summary,
    access: { anyOf: access },
    params: KeyPath,
    answer: { status: 200, description: 'the key', schema: KeyRecord },
    problems: { 404: NO_KEY, 409: conflict },
    ...(expensive ? { expensive } : {}),
    handle: (ctx, { params, actor }) => changeKey(ctx, params.tenantId, params.kid, action, actor),
    audit: {
      action: `key.${action}`,
      target: (_input, key) => key.kid,
      details: (_input, key) => ({ state: key.state, version: key.currentVersion }),
    },
  });
}

/** Mounted at /api/v3/admin/tenants/:tenantId/keys. */
export const KEY_ENDPOINTS = [
  endpoint({
    method: 'get',
    path: '/',
    operationId: 'listKeys',
    tag,
    summary: 'List keys (metadata only); archived keys only with state=archived',
    access: { anyOf: ['admin.keys.read'] },
    params: Tenant,
    query: Type.Object({
      state: Type.Optional(Type.Enum([...KEY_STATES], { description: 'only keys in this state' })),
      ...PAGE_QUERY,
    }),
    answer: { status: 200, description: 'keys', schema: PageOf(KeyRecord) },
    handle: (ctx, { params, query }) =>
      listAdminKeys(ctx, params.tenantId, query.state, pageRequest(query)),
  }),
  endpoint({
    method: 'post',
    path: '/',
    operationId: 'createKey',
    tag,
    summary: 'Create a key; slow types (RSA-3072/4096, SLH-DSA) are generated in the worker pool',
    description:
      "Unknown members answer 400 naming the member. A generated key is scheduled for automatic rotation by its own rotationPeriodDays or the tenant's effective policy.",
    access: { anyOf: ['admin.keys.create'] },
    params: Tenant,
    body: Body(
      {
        type: Type.String({
          description: 'a key type of the registry (see the type of the key record)',
        }),
        usage: Type.Optional(
          Type.Enum([...USAGES], {
            description:
              "one the type can do (422 key-usage-mismatch otherwise); the type's default",
          }),
        ),
        kid: Type.Optional(KidText('default key-<uuid>')),
        description: Type.Optional(Type.String({ maxLength: MAX_DESCRIPTION })),
        rotationPeriodDays: Type.Optional(RotationPeriod()),
      },
      {
        type: 'aes-256',
        kid: 'orders-db',
        description: 'orders database column encryption',
        rotationPeriodDays: 90,
      },
    ),
    answer: { status: 201, description: 'the key', schema: KeyRecord },
    problems: {
      409: 'the kid exists',
      422: 'policy-violation (type not allowed) or key-usage-mismatch',
      429: "rate-limited: the caller's budget of expensive work (EXPENSIVE_BUDGET) is spent by key generations",
    },
    expensive: { kinds: ['key-generation'] },
    handle: (ctx, { params, body, actor }) => createKey(ctx, params.tenantId, body, actor),
    audit: {
      action: 'key.create',
      target: (_input, key) => key.kid,
      details: (_input, key) => ({ type: key.type, usage: key.usage }),
    },
  }),
  endpoint({
    method: 'get',
    path: '/:kid',
    operationId: 'getKey',
    tag,
    summary: "Read a key's metadata, settings, versions and public key",
    access: { anyOf: ['admin.keys.read'] },
    params: KeyPath,
    answer: { status: 200, description: 'the key', schema: KeyDetail },
    problems: { 404: NO_KEY },
    handle: (ctx, { params }) => readKey(ctx, params.tenantId, params.kid),
  }),
  endpoint({
    method: 'patch',
    path: '/:kid',
    operationId: 'updateKey',
    tag,
    summary: "Change a key's settings: description, rotation period, minimum decryption version",
    description:
      "At least one member; unknown members answer 400 naming the member, and nothing changes on any refusal. minDecryptionVersion retires older versions for decrypt and verify (Vault min_decryption_version) without deleting them: lowering it again restores them. The change reaches every instance's key cache at once.",
    access: { anyOf: ['admin.keys.update'] },
    params: KeyPath,
    body: KeySettings,
    answer: { status: 200, description: 'the key record', schema: KeyDetail },
    problems: {
      400: 'validation-failed: unknown member, empty body, description not a string or over 500 characters, rotationPeriodDays not an integer from 1 to 3650, minDecryptionVersion below 1 or above the current version',
      404: NO_KEY,
      409: 'invalid-transition: a rotation period for a key that does not rotate (imported or exchanged)',
    },
    handle: async (ctx, { params, body }) => {
      const row = await applySettings(
        ctx,
        params.tenantId,
        params.kid,
        body,
        async (t) => (await tenantPolicy(ctx, t)).effective.rotationPeriodDays,
      );
      return readKey(ctx, params.tenantId, row.kid as string);
    },
    audit: {
      action: 'key.update',
      target: (_input, key) => key.kid,
      details: ({ body }) => ({ ...body }),
    },
  }),
  endpoint({
    method: 'get',
    path: '/:kid/public',
    operationId: 'adminGetPublicKeys',
    tag,
    summary: "Every retained version's public key, as JWK and PEM",
    description: 'A token of the tenant or `admin.platform.cross-tenant`. Any key state.',
    access: { anyOf: ['admin.keys.export-public'] },
    params: KeyPath,
    answer: { status: 200, description: 'the public keys', schema: PublicKeys },
    problems: {
      404: NO_KEY,
      422: 'key-usage-mismatch: a symmetric key (AES, HMAC) has no public key',
    },
    handle: (ctx, { params }) => publicKeysOf(ctx, params.tenantId, params.kid, { runtime: false }),
  }),
  lifecycleRow(
    'rotate',
    ['admin.keys.rotate'],
    'Add a new material version (generated keys only)',
    'invalid-transition: not active, or an imported key',
    // A new version of an RSA or SLH-DSA key is a generation on the caller's budget.
    { kinds: ['key-generation'] },
  ),
  lifecycleRow(
    'suspend',
    ['admin.keys.suspend'],
    'Suspend an active key (temporarily unusable)',
    'invalid-transition: not active',
  ),
  // The catalogue's admin.keys.resume resumes; admin.keys.suspend, which did before it, still does.
  lifecycleRow(
    'resume',
    ['admin.keys.resume', 'admin.keys.suspend'],
    'Resume a suspended key',
    'invalid-transition: not suspended',
  ),
  lifecycleRow(
    'revoke',
    ['admin.keys.revoke'],
    'Revoke an active or suspended key (all operations blocked)',
    'invalid-transition: already revoked or archived',
  ),
  lifecycleRow(
    'archive',
    ['admin.keys.archive'],
    'Archive a revoked key',
    'invalid-transition: not revoked',
  ),
];
