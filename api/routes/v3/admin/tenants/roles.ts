/**
 * Roles of a tenant: a name and a permission list from the catalogue.
 *
 * Tests: test/integration/auth/token-lifetime.test.ts,
 *   test/integration/auth/endpoint-budgets.test.ts, test/integration/aws-kms/key-lifecycle.test.ts,
 *   test/integration/fanout/faults.test.ts, test/integration/http/unread-bodies.test.ts
 */
import Type from 'typebox';
import { endpoint } from '../../../../rows/endpoint.ts';
import { pageRequest } from '../../../../rows/pagination.ts';
import { PageOf, PageQuery, TENANT_PARAM, TenantRecord } from '../../../../schemas/common.ts';
import {
  createRole,
  deleteRole,
  findRole,
  listRoles,
  roleView,
  updateRole,
} from '../../../../services/admin/roles.ts';
import { NewRole, Role, RoleChange } from '../../../../schemas/roles.ts';

// The one rule for both (services/admin/roles.ts) answers the bounds, naming what is wrong.
const PERMISSIONS_REFUSED =
  'unknown permissions (listed in unknownPermissions) or platform permissions in a tenant role';

const Tenant = Type.Object(TENANT_PARAM);
const RolePath = TenantRecord('role');
const tag = 'roles';

/** Mounted at /api/v3/admin/tenants/:tenantId/roles. */
export const ROLE_ENDPOINTS = [
  endpoint({
    method: 'get',
    path: '/',
    operationId: 'listRoles',
    tag,
    summary: 'List roles',
    access: { anyOf: ['admin.roles.read'] },
    params: Tenant,
    query: PageQuery,
    answer: { status: 200, description: 'roles', schema: PageOf(Role) },
    handle: (ctx, { params, query }) => listRoles(ctx.db, params.tenantId, pageRequest(query)),
  }),
  endpoint({
    method: 'post',
    path: '/',
    operationId: 'createRole',
    tag,
    summary:
      'Create a role from catalogue permissions (admin.platform.* only in the platform tenant)',
    access: { anyOf: ['admin.roles.create'] },
    params: Tenant,
    body: NewRole,
    answer: { status: 201, description: 'the role', schema: Role },
    problems: { 400: PERMISSIONS_REFUSED, 409: 'a role of that name exists' },
    handle: (ctx, { params, body }) => createRole(ctx, params.tenantId, body),
    audit: {
      action: 'role.create',
      target: (_input, role) => role.id,
      details: (_input, role) => ({ permissions: role.permissions }),
    },
  }),
  endpoint({
    method: 'get',
    path: '/:id',
    operationId: 'getRole',
    tag,
    summary: 'Read a role',
    access: { anyOf: ['admin.roles.read'] },
    params: RolePath,
    answer: { status: 200, description: 'the role', schema: Role },
    problems: { 404: 'no such role in this tenant' },
    handle: async (ctx, { params }) => roleView(await findRole(ctx.db, params.tenantId, params.id)),
  }),
  endpoint({
    method: 'patch',
    path: '/:id',
    operationId: 'updateRole',
    tag,
    summary: 'Rename a role or replace its permissions',
    description:
      'Narrowed permissions end the outstanding tokens of its holders on every instance (they carry the removed ones).',
    access: { anyOf: ['admin.roles.update'] },
    params: RolePath,
    body: RoleChange,
    answer: { status: 200, description: 'the role', schema: Role },
    problems: {
      400: PERMISSIONS_REFUSED,
      404: 'no such role in this tenant',
      409: 'another role of that name exists',
    },
    handle: (ctx, { params, body, actor }) =>
      updateRole(ctx, params.tenantId, params.id, body, actor),
    audit: {
      action: 'role.update',
      target: (_input, role) => role.id,
      details: ({ body }) =>
        body.permissions !== undefined ? { permissions: body.permissions } : undefined,
    },
  }),
  endpoint({
    method: 'delete',
    path: '/:id',
    operationId: 'deleteRole',
    tag,
    summary: 'Delete an unused role',
    access: { anyOf: ['admin.roles.delete'] },
    params: RolePath,
    answer: { status: 204, description: 'deleted' },
    problems: { 404: 'no such role in this tenant', 409: 'workloads or users still hold the role' },
    handle: (ctx, { params }) => deleteRole(ctx.db, params.tenantId, params.id),
    audit: { action: 'role.delete', target: ({ params }) => params.id },
  }),
];
