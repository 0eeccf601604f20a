/**
 * Bulk key orchestration, mounted at /api/v3/admin/tenants/:tenantId/keys/orchestrate
 * ahead of the key rows: rotate, suspend, resume or revoke many keys by kid list or selector,
 * inline up to 50 keys, else in the background with its progress at /orchestrate/{operationId}.
 *
 * Tests: test/integration/core/expensive-routes.test.ts,
 *   test/integration/http/canonical-input.test.ts, test/integration/admin/key-settings.test.ts
 */
import Type from 'typebox';
import { endpoint } from '../../../../../rows/endpoint.ts';
import { Body, Resource, TENANT_PARAM, Time, Uuid } from '../../../../../schemas/common.ts';
import { orchestrate, orchestration } from '../../../../../services/keys/orchestrate.ts';
import { KEY_STATES } from '../../../../../../shared/keys/lifecycle.ts';
import { KEY_TYPES } from '../../../../../../shared/crypto/registry.ts';
import { KID } from '../../../../../../shared/ids.ts';

const TENANT_ID = '3f2c1a9e-5b7d-4c1e-9a2b-6d8e0f1a2b3c';
const AT = '2026-11-23T16:00:00.000Z';
const OPERATION_ID = 'c1d2e3f4-a5b6-4c7d-8e9f-0a1b2c3d4e5f';
const KeyState = () => Type.Enum([...KEY_STATES]);
const KidText = () => Type.String({ pattern: KID.source });
/** The most keys one bulk operation names or matches. */
const MAX_BULK = 10_000;
const Tenant = Type.Object(TENANT_PARAM);
const tag = 'keys';

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

/** Mounted at /api/v3/admin/tenants/:tenantId/keys/orchestrate. */
export const ORCHESTRATE_ENDPOINTS = [
  endpoint({
    method: 'post',
    path: '/',
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
    // Rotating a batch of RSA keys is a generation per key, on the caller's budget.
    expensive: { kinds: ['key-generation'] },
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
    path: '/:operationId',
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
];
