/**
 * Admin key routes (contract 3): create, list, read, change settings, rotate, suspend, resume,
 * revoke, archive, bulk orchestration and public keys, and keystore import (contract 4, a
 * multipart form its handler reads), as route rows. Never returns private material.
 */
import Type from 'typebox';
import { endpoint } from '../../../../http/endpoint.ts';
import { pageRequest } from '../../../../http/pagination.ts';
import {
  IMPORT_PROBLEMS,
  ImportedKeys,
  KEYSTORE_FORM,
  importedKeyEvents,
  importIntoPathTenant,
} from '../../../../http/keystore-import.ts';
import {
  Body,
  PageOf,
  PAGE_QUERY,
  Resource,
  TENANT_PARAM,
  Time,
  Uuid,
} from '../../../../http/schemas.ts';
import { KeyRecord, PublicKeys } from '../../../../http/key-schemas.ts';
import { changeKey, createKey, readKey } from '../../../../services/keys/store.ts';
import { MAX_ROTATION_PERIOD_DAYS, applySettings } from '../../../../services/keys/settings.ts';
import { tenantPolicy } from '../../../../services/policies.ts';
import { orchestrate, orchestration } from '../../../../services/keys/orchestrate.ts';
import { listAdminKeys } from '../../../../services/key-lists.ts';
import { publicKeysOf } from '../../../../../shared/keys/public-view.ts';
import { KEY_STATES, type KeyAction } from '../../../../../shared/keys/lifecycle.ts';
import { KEY_TYPES } from '../../../../../shared/crypto/registry.ts';
import { KID } from '../../../../../shared/ids.ts';

const TENANT_ID = '3f2c1a9e-5b7d-4c1e-9a2b-6d8e0f1a2b3c';
const AT = '2026-11-23T16:00:00.000Z';
const OPERATION_ID = 'c1d2e3f4-a5b6-4c7d-8e9f-0a1b2c3d4e5f';

const USAGES = ['encrypt', 'sign', 'mac', 'verify'] as const;
const Usage = () => Type.Enum([...USAGES]);
const KeyState = () => Type.Enum([...KEY_STATES]);
const KidText = (description?: string) =>
  Type.String({ pattern: KID.source, ...(description ? { description } : {}) });
const RotationPeriod = () => Type.Integer({ minimum: 1, maximum: MAX_ROTATION_PERIOD_DAYS });
const MAX_DESCRIPTION = 500;
/** The most keys one bulk operation names or matches. */
const MAX_BULK = 10_000;

/** A key's record with the versions it holds (services/keys/store.ts readKey). */
const KeyDetail = Resource(
  {
    ...KeyRecord.properties,
    versions: Type.Array(
      Type.Object({ version: Type.Integer(), createdAt: Time(), hasCertificate: Type.Boolean() }),
    ),
  },
  {
    ...(KeyRecord as { examples?: object[] }).examples?.[0],
    versions: [1, 2, 3].map((version) => ({ version, createdAt: AT, hasCertificate: false })),
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

/** A problem document (components/schemas/Problem), as a bulk result carries it. */
const ProblemDocument = Type.Object({
  type: Type.String(),
  title: Type.String(),
  status: Type.Integer(),
  detail: Type.Optional(Type.String()),
});
const KeyResult = Type.Object({
  kid: Type.String(),
  status: Type.Integer(),
  state: Type.Optional(KeyState()),
  version: Type.Optional(Type.Integer()),
  error: Type.Optional(ProblemDocument),
});
const BULK_ACTIONS = ['rotate', 'suspend', 'resume', 'revoke'] as const;

const Orchestration = Body(
  {
    operation: Type.Enum([...BULK_ACTIONS]),
    kids: Type.Optional(Type.Array(KidText(), { minItems: 1, maxItems: MAX_BULK })),
    selector: Type.Optional(
      Type.Object(
        {
          type: Type.Optional(Type.Enum([...KEY_TYPES])),
          usage: Type.Optional(Type.Enum(['encrypt', 'sign'])),
          state: Type.Optional(KeyState()),
          kidPrefix: Type.Optional(KidText()),
          all: Type.Optional(
            Type.Literal(true, { description: 'select every key of the tenant; stands alone' }),
          ),
        },
        {
          additionalProperties: false,
          minProperties: 1,
          description: 'a filter on at least one member, or {all: true} alone to select every key',
        },
      ),
    ),
    dryRun: Type.Optional(
      Type.Boolean({
        description: 'answer the kids that would be touched and their count; change nothing',
      }),
    ),
    expectedCount: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: MAX_BULK,
        description: 'refuse with 409 unless exactly this many keys match',
      }),
    ),
  },
  { operation: 'rotate', selector: { state: 'active' } },
);
const RESULTS_EXAMPLE = [
  { kid: 'orders-db', status: 200, state: 'active', version: 4 },
  {
    kid: 'legacy-import',
    status: 409,
    error: {
      type: 'http://127.0.0.1:8080/problems/invalid-transition',
      title: 'Invalid State Transition',
      status: 409,
      detail: 'key legacy-import is imported and cannot rotate',
    },
  },
];
const INLINE_EXAMPLE = { operation: 'rotate', total: 2, succeeded: 1, results: RESULTS_EXAMPLE };
const Inline = Type.Union(
  [
    Type.Object({
      operation: Type.String(),
      total: Type.Integer(),
      succeeded: Type.Integer(),
      results: Type.Array(KeyResult),
    }),
    Type.Object({
      operation: Type.String(),
      dryRun: Type.Literal(true),
      total: Type.Integer(),
      kids: Type.Array(Type.String()),
    }),
  ],
  { examples: [INLINE_EXAMPLE] },
);
const Started = Resource(
  {
    operationId: Uuid(),
    operation: Type.String(),
    total: Type.Integer(),
    state: Type.Literal('running'),
    progress: Type.String({ description: 'path of the progress resource' }),
  },
  {
    operationId: OPERATION_ID,
    operation: 'rotate',
    total: 120,
    state: 'running',
    progress: `/api/v3/admin/tenants/${TENANT_ID}/keys/orchestrate/${OPERATION_ID}`,
  },
);
const Operation = Resource(
  {
    id: Uuid(),
    tenantId: Type.Optional(Uuid()),
    operation: Type.String(),
    total: Type.Integer(),
    done: Type.Integer(),
    failed: Type.Integer(),
    state: Type.Enum(['running', 'completed', 'interrupted'], {
      description:
        'interrupted: the instance running it stopped before the end; results lists the keys recorded until then, and the keys after them were changed at most up to a quarter of a second before it stopped',
    }),
    results: Type.Array(KeyResult),
    startedAt: Type.Optional(Time()),
    finishedAt: Type.Optional(Time()),
  },
  {
    id: OPERATION_ID,
    tenantId: TENANT_ID,
    operation: 'rotate',
    total: 120,
    done: 120,
    failed: 1,
    state: 'completed',
    results: RESULTS_EXAMPLE,
    startedAt: AT,
    finishedAt: '2026-11-23T16:00:02.000Z',
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
    },
    handle: (ctx, { params, body }) => createKey(ctx, params.tenantId, body),
    audit: {
      action: 'key.create',
      target: (_input, key) => key.kid,
      details: (_input, key) => ({ type: key.type, usage: key.usage }),
    },
  }),
  endpoint({
    method: 'post',
    path: '/orchestrate',
    operationId: 'orchestrateKeys',
    tag,
    summary: 'Rotate, suspend, resume or revoke many keys, by kid list or selector',
    description:
      'Give exactly one of kids and selector. A selector filters on at least one member, or selects every key of the tenant with {all: true} alone; unknown members, wrong types and an empty selector answer 400. dryRun answers the kids that would be touched and changes nothing; expectedCount refuses (409) when the match has another size. Up to 50 keys answer 200 inline with a result per key; larger batches answer 202 and run off the request path, with progress at the returned URL.',
    access: { anyOf: ['admin.keys.orchestrate'] },
    params: Tenant,
    body: Orchestration,
    answer: {
      status: 200,
      description: 'a result per key, or on a dry run the kids that would be touched',
      schema: Inline,
    },
    otherAnswers: [{ status: 202, description: 'started', schema: Started }],
    problems: {
      400: 'validation-failed: unknown member, wrong type, empty selector, or both or neither of kids and selector',
      409: 'conflict: the match differs from expectedCount (details: expectedCount, matched); nothing changed',
    },
    handle: async (ctx, { params, body, actor, res }) => {
      const result = await orchestrate(ctx, { tenantId: params.tenantId, actor }, body);
      res.status(result.status);
      return result.body;
    },
  }),
  endpoint({
    method: 'get',
    path: '/orchestrate/:operationId',
    operationId: 'getKeyOperation',
    tag,
    summary: 'Progress of a background bulk operation',
    access: { anyOf: ['admin.keys.orchestrate'] },
    params: Type.Object({
      ...TENANT_PARAM,
      operationId: Type.String({
        format: 'uuid',
        description: 'from the 202 answer',
        examples: [OPERATION_ID],
      }),
    }),
    answer: { status: 200, description: 'the operation', schema: Operation },
    problems: { 404: 'no such operation in this tenant' },
    handle: (ctx, { params }) => orchestration(ctx, params.tenantId, params.operationId),
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

/**
 * Mounted at /api/v3/admin/tenants/:tenantId/keys/import-keystore, ahead of the key rows (whose
 * `/:kid` would answer its POST 405): a multipart form the handler reads itself, imported by
 * http/keystore-import.ts.
 */
export const KEYSTORE_IMPORT_ENDPOINTS = [
  endpoint({
    method: 'post',
    path: '/',
    operationId: 'importKeystore',
    tag,
    summary:
      'Import the keys of a PKCS#12 file or a PEM key with its certificate chain (contract 4)',
    description:
      "PKCS#12 with PBES2 (AES, PBKDF2, SHA-256 MAC) or legacy 3DES/RC2/SHA-1; PEM with a plain or encrypted private key. The chain is stored and the key is found by issuer and serial number or subject key identifier. Each key pair imports as one key whose `allowedUsages` are what the certificate's keyUsage/extendedKeyUsage allow of what its type does (digitalSignature or nonRepudiation: sign; keyEncipherment, dataEncipherment or keyAgreement: encrypt), or everything its type does when the certificate has neither extension (openssl req -x509 and keytool -genkeypair make such certificates): an RSA or EC key then both signs and encrypts. Its `usages` are all of them, or the one `usage` names (narrowed at import; PATCH usages changes them later within allowedUsages). Keys: RSA 2048/3072/4096, RSASSA-PSS 2048/3072/4096 (id-RSASSA-PSS PKCS#8 keys and certificates: sign only, type rsa-pss-*; a key whose RSASSA-PSS-params bind it to a hash other than SHA-256/384/512, to MGF1 over another hash, or to a salt longer than the hash is keystore-unsupported-algorithm when it is to sign), EC P-256/P-384/P-521, Ed25519, Ed448 (sign only), and X25519/X448 (encrypt only: they open CMS key agreement recipients, RFC 8418). Every key pair is checked for consistency. A PEM bundle or PKCS#12 file of certificates without any private key imports each certificate as a verify-only key (usage `verify`, contract 10): it verifies CMS signers (an outside sender's mail) and is never used to sign or decrypt; `trustAnchor=true` makes them the tenant's trust anchors for `verify: chain`. A failure stores nothing.",
    access: { anyOf: ['admin.keys.import'] },
    params: Tenant,
    request: KEYSTORE_FORM,
    answer: { status: 201, description: 'the imported keys', schema: ImportedKeys },
    problems: IMPORT_PROBLEMS,
    audit: { action: 'key.import', each: (_input, keys) => importedKeyEvents(keys) },
    handle: importIntoPathTenant,
  }),
];
