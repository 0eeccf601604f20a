/**
 * Policy templates, the effective policy of a tenant, and its overrides.
 *
 * Tests: test/integration/admin/exchanges.test.ts, test/integration/admin/key-settings.test.ts,
 *   test/integration/admin/keystore-import.test.ts,
 *   test/integration/vault-transit/mounts.test.ts
 */
import Type from 'typebox';
import { endpoint } from '../../../../rows/endpoint.ts';
import { Body, Resource, TENANT_PARAM, Uuid } from '../../../../schemas/common.ts';
import { policyTemplates, setOverrides, tenantPolicy } from '../../../../services/policies.ts';
import { MAX_ROTATION_PERIOD_DAYS } from '../../../../services/keys/settings.ts';
import {
  ALL_KEY_TYPES,
  MAX_TRANSIT_MOUNTS,
  POLICY_TEMPLATES,
  RESERVED_TRANSIT_MOUNTS,
  TRANSIT_MOUNT_PATTERN,
} from '../../../../../shared/policy.ts';

const TENANT_ID = '3f2c1a9e-5b7d-4c1e-9a2b-6d8e0f1a2b3c';

const Policy = Type.Object({
  template: Type.String(),
  allowedKeyTypes: Type.Array(Type.String()),
  rotationPeriodDays: Type.Integer(),
  tokenLifetimes: Type.Object({
    clientCredentials: Type.Integer(),
    human: Type.Integer(),
    tokenExchange: Type.Integer(),
    refresh: Type.Integer(),
    rememberMeRefresh: Type.Integer(),
  }),
  rateLimits: Type.Object({
    tokenRequestsPerMinute: Type.Integer(),
    failedAuthenticationsPerMinute: Type.Integer(),
    apiRequestsPerMinutePerEndpoint: Type.Integer(),
  }),
  vaultTransitMounts: Type.Array(Type.String(), {
    description: "where the tenant's Vault Transit API answers: /v1/<mount>/...",
  }),
});

const ROTATION_PERIOD = Type.Integer({ minimum: 1, maximum: MAX_ROTATION_PERIOD_DAYS });
const NARROWS = 'may only narrow the template';
const MOUNTS = `the paths below /v1/ where the tenant's Vault Transit API answers, replacing the default ['transit']: 1 to ${MAX_TRANSIT_MOUNTS} distinct single path segments, none of Vault's reserved ${RESERVED_TRANSIT_MOUNTS.join(', ')}`;

/** Overrides as a request gives them: a catalogued template, supported key types, a bounded period. */
const Overrides = Body(
  {
    template: Type.Optional(Type.Enum([...POLICY_TEMPLATES.keys()])),
    allowedKeyTypes: Type.Optional(Type.Array(Type.Enum(ALL_KEY_TYPES), { description: NARROWS })),
    rotationPeriodDays: Type.Optional(ROTATION_PERIOD),
    vaultTransitMounts: Type.Optional(
      Type.Array(Type.String({ pattern: TRANSIT_MOUNT_PATTERN }), {
        minItems: 1,
        maxItems: MAX_TRANSIT_MOUNTS,
        description: MOUNTS,
      }),
    ),
  },
  { template: 'strict', rotationPeriodDays: 90, vaultTransitMounts: ['transit', 'sops'] },
);

/**
 * Overrides as stored: a name written before templates were checked (even "constructor") is
 * answered as it is, and reads as the default template in the effective policy.
 */
const StoredOverrides = Type.Object({
  template: Type.Optional(Type.String()),
  allowedKeyTypes: Type.Optional(Type.Array(Type.String(), { description: NARROWS })),
  rotationPeriodDays: Type.Optional(Type.Integer()),
  vaultTransitMounts: Type.Optional(Type.Array(Type.String(), { description: MOUNTS })),
});

const POLICY_EXAMPLE = {
  template: 'strict',
  allowedKeyTypes: ['aes-256', 'ec-p256', 'ml-dsa-65'],
  rotationPeriodDays: 90,
  tokenLifetimes: {
    clientCredentials: 36000,
    human: 3600,
    tokenExchange: 900,
    refresh: 86400,
    rememberMeRefresh: 2592000,
  },
  rateLimits: {
    tokenRequestsPerMinute: 600000,
    failedAuthenticationsPerMinute: 10,
    apiRequestsPerMinutePerEndpoint: 6000000,
  },
  vaultTransitMounts: ['transit'],
};

const TenantPolicy = Resource(
  { tenantId: Uuid(), overrides: StoredOverrides, policy: Policy },
  { tenantId: TENANT_ID, overrides: { template: 'strict' }, policy: POLICY_EXAMPLE },
);

const Templates = Resource(
  {
    items: Type.Array(
      Type.Object({
        name: Type.String(),
        description: Type.String(),
        policy: Type.Object({}, { description: 'what the template sets' }),
      }),
    ),
  },
  {
    items: [
      { name: 'default', description: 'Every supported key type; yearly rotation', policy: {} },
      {
        name: 'strict',
        description: 'No 128-bit symmetric or 2048-bit RSA keys; rotation every 90 days',
        policy: { allowedKeyTypes: ['aes-256', 'ec-p256'], rotationPeriodDays: 90 },
      },
    ],
  },
);

const Tenant = Type.Object(TENANT_PARAM);
const tag = 'policies';

/** Mounted at /api/v3/admin/tenants/:tenantId/policies. */
export const POLICY_ENDPOINTS = [
  endpoint({
    method: 'get',
    path: '/templates',
    operationId: 'listPolicyTemplates',
    tag,
    summary: 'Policy templates',
    access: { anyOf: ['admin.policy.templates.read'] },
    params: Tenant,
    answer: { status: 200, description: 'templates', schema: Templates },
    handle: () => policyTemplates(),
  }),
  endpoint({
    method: 'get',
    path: '/effective',
    operationId: 'getEffectivePolicy',
    tag,
    summary: 'The effective policy: platform defaults, template and tenant overrides',
    access: { anyOf: ['admin.policy.effective.read'] },
    params: Tenant,
    answer: { status: 200, description: 'the policy', schema: TenantPolicy },
    problems: { 404: 'no such tenant' },
    handle: async (ctx, { params }) => {
      const { overrides, effective } = await tenantPolicy(ctx, params.tenantId);
      return { tenantId: params.tenantId, overrides, policy: effective };
    },
  }),
  endpoint({
    method: 'put',
    path: '/overrides',
    operationId: 'replacePolicyOverrides',
    tag,
    summary: "Replace the tenant's overrides",
    access: { anyOf: ['admin.policy.overrides.write'] },
    params: Tenant,
    body: Overrides,
    answer: { status: 200, description: 'the new effective policy', schema: TenantPolicy },
    problems: {
      400: 'validation-failed: an unknown template or key type, a period out of bounds, vaultTransitMounts empty, over 8, a name not one path segment, named twice or reserved',
    },
    handle: (ctx, { params, body }) => setOverrides(ctx, params.tenantId, body),
    audit: {
      action: 'policy.overrides.update',
      target: ({ params }) => params.tenantId,
      details: (_input, result) => ({ overrides: result.overrides }),
    },
  }),
];
