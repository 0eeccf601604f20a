/**
 * Workloads of a tenant: register (secret shown once), list, read, disable/enable, rotate secret, delete.
 *
 * Tests: test/integration/aws-kms/cross-instance.test.ts,
 *   test/integration/aws-kms/key-lifecycle.test.ts, test/integration/aws-kms/bad-input.test.ts,
 *   test/integration/admin/master-key-access-keys.test.ts,
 *   test/integration/auth/subject-revocation.test.ts,
 *   test/integration/aws-kms/anonymous-until-signed.test.ts, and 6 more under test/integration/
 */
import Type from 'typebox';
import { endpoint } from '../../../../rows/endpoint.ts';
import { pageRequest } from '../../../../rows/pagination.ts';
import {
  Body,
  PageOf,
  PageQuery,
  Resource,
  TENANT_PARAM,
  TenantRecord,
  Time,
  Uuid,
} from '../../../../schemas/common.ts';
import {
  deleteWorkload,
  listWorkloads,
  readWorkload,
  registerWorkload,
  rotateWorkloadSecret,
  setWorkloadDisabled,
} from '../../../../services/admin/workloads.ts';
import {
  createAccessKey,
  deleteAccessKey,
  listAccessKeys,
} from '../../../../services/auth/access-keys.ts';
import {
  WORKLOAD_EXAMPLE,
  SECRET_EXAMPLE,
  Workload,
  NewWorkload,
  AccessKeys,
  NewAccessKey,
  ACCESS_KEY_EXAMPLE,
  ACCESS_KEY_ID,
  NewWorkloadRequest,
} from '../../../../schemas/workloads.ts';

const NewSecret = Resource(
  {
    clientId: Uuid(),
    clientSecret: Uuid('the new secret, shown only here'),
    previousValidUntil: Time(),
  },
  {
    clientId: WORKLOAD_EXAMPLE.clientId,
    clientSecret: SECRET_EXAMPLE,
    previousValidUntil: '2026-11-24T16:00:00.000Z',
  },
);

const Tenant = Type.Object(TENANT_PARAM);
const WorkloadPath = TenantRecord('workload');
const AccessKeyPath = Type.Object({
  ...WorkloadPath.properties,
  accessKeyId: Type.String({
    pattern: ACCESS_KEY_ID,
    description: 'the access key id',
    examples: [ACCESS_KEY_EXAMPLE.accessKeyId],
  }),
});
const READ = { anyOf: ['admin.workloads.read'] } as const;
const ROTATE = { anyOf: ['admin.workloads.rotate-secret'] } as const;
const NO_WORKLOAD = 'no such workload in this tenant';
const tag = 'workloads';

/** Disabling ends the workload's logins and tokens; enabling lets it log in again. */
const toggle = (action: 'disable' | 'enable', summary: string) =>
  endpoint({
    method: 'post',
    path: `/:id/${action}`,
    operationId: `${action}Workload`,
    tag,
    summary,
    access: { anyOf: ['admin.workloads.disable'] },
    params: WorkloadPath,
    answer: { status: 200, description: 'the workload', schema: Workload },
    problems: { 404: NO_WORKLOAD },
    handle: (ctx, { params, actor }) =>
      setWorkloadDisabled(ctx, params.tenantId, params.id, action === 'disable', actor),
    audit: { action: `workload.${action}`, target: (_input, w) => w.id },
  });

/** Mounted at /api/v3/admin/tenants/:tenantId/workloads. */
export const WORKLOAD_ENDPOINTS = [
  endpoint({
    method: 'get',
    path: '/',
    operationId: 'listWorkloads',
    tag,
    summary: 'List workloads (never their secrets)',
    access: READ,
    params: Tenant,
    query: PageQuery,
    answer: { status: 200, description: 'workloads', schema: PageOf(Workload) },
    handle: (ctx, { params, query }) => listWorkloads(ctx.db, params.tenantId, pageRequest(query)),
  }),
  endpoint({
    method: 'post',
    path: '/',
    operationId: 'createWorkload',
    tag,
    summary: 'Register a workload once per app and tenant; the secret is returned only here',
    access: { anyOf: ['admin.workloads.create'] },
    params: Tenant,
    body: NewWorkloadRequest,
    answer: {
      status: 201,
      description: 'the workload with clientId and clientSecret',
      schema: NewWorkload,
    },
    problems: {
      400: 'invalid input (validation-failed naming the field), or roleId names no role of this tenant',
      409: 'a workload of that name exists in this tenant',
    },
    handle: (ctx, { params, body }) => registerWorkload(ctx, params.tenantId, body),
    audit: { action: 'workload.register', target: (_input, w) => w.id },
  }),
  endpoint({
    method: 'get',
    path: '/:id',
    operationId: 'getWorkload',
    tag,
    summary: 'Read a workload',
    access: READ,
    params: WorkloadPath,
    answer: { status: 200, description: 'the workload', schema: Workload },
    problems: { 404: NO_WORKLOAD },
    handle: (ctx, { params }) => readWorkload(ctx.db, params.tenantId, params.id),
  }),
  endpoint({
    method: 'delete',
    path: '/:id',
    operationId: 'deleteWorkload',
    tag,
    summary: 'Delete a workload',
    description: 'Its access tokens end on every instance.',
    access: { anyOf: ['admin.workloads.delete'] },
    params: WorkloadPath,
    answer: { status: 204, description: 'deleted' },
    problems: { 404: NO_WORKLOAD },
    handle: (ctx, { params, actor }) => deleteWorkload(ctx, params.tenantId, params.id, actor),
    audit: { action: 'workload.delete', target: ({ params }) => params.id },
  }),
  toggle('disable', 'Disable a workload: its logins answer 401 invalid_client'),
  toggle('enable', 'Enable a disabled workload'),
  endpoint({
    method: 'post',
    path: '/:id/secret',
    operationId: 'rotateWorkloadSecret',
    tag,
    summary: 'Rotate the client secret; older secrets stay valid for the grace period',
    access: ROTATE,
    params: WorkloadPath,
    body: Body(
      {
        graceSeconds: Type.Optional(
          Type.Integer({
            minimum: 0,
            maximum: 2592000,
            description:
              'how long the older secrets stay valid (at most 30 days); the deployment default (CLIENT_SECRET_GRACE_SECONDS) when absent',
          }),
        ),
      },
      { graceSeconds: 600 },
    ),
    bodyOptional: true,
    answer: { status: 201, description: 'the new secret, shown once', schema: NewSecret },
    problems: { 404: NO_WORKLOAD },
    handle: (ctx, { params, body }) =>
      rotateWorkloadSecret(ctx, params.tenantId, params.id, body.graceSeconds),
    audit: { action: 'workload.secret.rotate', target: ({ params }) => params.id },
  }),
  // AWS KMS API credentials: the secret is answered once, by the POST.
  endpoint({
    method: 'get',
    path: '/:id/access-keys',
    operationId: 'listAccessKeys',
    tag,
    summary: "List a workload's AWS access keys (never their secrets)",
    access: READ,
    params: WorkloadPath,
    answer: { status: 200, description: 'the access keys, oldest first', schema: AccessKeys },
    problems: { 404: NO_WORKLOAD },
    handle: (ctx, { params }) => listAccessKeys(ctx, params.tenantId, params.id),
  }),
  endpoint({
    method: 'post',
    path: '/:id/access-keys',
    operationId: 'createAccessKey',
    tag,
    summary:
      'Create an AWS access key for the AWS KMS API (SigV4); the secret is returned only here',
    description:
      'The secret is stored sealed under the master key (SigV4 needs it to verify) and never shown again. At most 5 per workload.',
    access: ROTATE,
    params: WorkloadPath,
    body: Body({}),
    bodyOptional: true,
    answer: {
      status: 201,
      description: 'the access key with its secretAccessKey, shown once',
      schema: NewAccessKey,
    },
    problems: { 404: NO_WORKLOAD, 409: 'conflict: the workload has 5 access keys already' },
    handle: (ctx, { params }) => createAccessKey(ctx, params.tenantId, params.id),
    audit: { action: 'workload.access-key.create', target: (_input, key) => key.accessKeyId },
  }),
  endpoint({
    method: 'delete',
    path: '/:id/access-keys/:accessKeyId',
    operationId: 'deleteAccessKey',
    tag,
    summary: 'Revoke an AWS access key on every instance',
    access: ROTATE,
    params: AccessKeyPath,
    answer: { status: 204, description: 'revoked' },
    problems: { 404: 'no such workload, or no such access key of it' },
    handle: (ctx, { params }) =>
      deleteAccessKey(ctx, params.tenantId, params.id, params.accessKeyId),
    audit: { action: 'workload.access-key.delete', target: ({ params }) => params.accessKeyId },
  }),
];
