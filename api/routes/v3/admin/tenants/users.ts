/**
 * Human users of a tenant (`admin.humanuser`: full CRUD); password hashes are never returned.
 *
 * Tests: test/integration/auth/subject-revocation.test.ts,
 *   test/integration/http/row-hostile.test.ts
 */
import Type from 'typebox';
import { endpoint } from '../../../../rows/endpoint.ts';
import { pageRequest } from '../../../../rows/pagination.ts';
import { PageOf, PageQuery, TENANT_PARAM, TenantRecord } from '../../../../schemas/common.ts';
import { NewUser, User, UserChange } from '../../../../schemas/users.ts';
import {
  createUser,
  deleteUser,
  listUsers,
  readUser,
  resetUserPassword,
  updateUser,
} from '../../../../services/admin/users.ts';

const Tenant = Type.Object(TENANT_PARAM);
const UserPath = TenantRecord('user');
const WRITE = 'admin.humanuser';
const READ = { anyOf: [WRITE, 'admin.humanuser.read'] } as const;
const tag = 'users';

/** Mounted at /api/v3/admin/tenants/:tenantId/users. */
export const USER_ENDPOINTS = [
  endpoint({
    method: 'get',
    path: '/',
    operationId: 'listUsers',
    tag,
    summary: 'List human users (never passwords)',
    access: READ,
    params: Tenant,
    query: PageQuery,
    answer: { status: 200, description: 'users', schema: PageOf(User) },
    handle: (ctx, { params, query }) => listUsers(ctx.db, params.tenantId, pageRequest(query)),
  }),
  endpoint({
    method: 'post',
    path: '/',
    operationId: 'createUser',
    tag,
    summary: 'Create a human user',
    access: { anyOf: [WRITE] },
    params: Tenant,
    body: NewUser,
    answer: { status: 201, description: 'the user', schema: User },
    problems: { 409: 'a user with that e-mail exists in this tenant' },
    handle: (ctx, { params, body }) => createUser(ctx, params.tenantId, body),
    audit: { action: 'user.create', target: (_input, user) => user.id },
  }),
  endpoint({
    method: 'get',
    path: '/:id',
    operationId: 'getUser',
    tag,
    summary: 'Read a user',
    access: READ,
    params: UserPath,
    answer: { status: 200, description: 'the user', schema: User },
    problems: { 404: 'no such user in this tenant' },
    handle: (ctx, { params }) => readUser(ctx.db, params.tenantId, params.id),
  }),
  endpoint({
    method: 'patch',
    path: '/:id',
    operationId: 'updateUser',
    tag,
    summary: "Change a user's role or disable it",
    access: { anyOf: [WRITE] },
    params: UserPath,
    body: UserChange,
    answer: { status: 200, description: 'the user', schema: User },
    problems: { 404: 'no such user in this tenant' },
    handle: (ctx, { params, body, actor }) =>
      updateUser(ctx, params.tenantId, params.id, body, actor),
    audit: {
      action: 'user.update',
      target: (_input, user) => user.id,
      details: ({ body }) => ({ roleId: body.roleId, disabled: body.disabled }),
    },
  }),
  endpoint({
    method: 'delete',
    path: '/:id',
    operationId: 'deleteUser',
    tag,
    summary: 'Delete a user',
    access: { anyOf: [WRITE] },
    params: UserPath,
    answer: { status: 204, description: 'deleted' },
    problems: { 404: 'no such user in this tenant' },
    handle: (ctx, { params, actor }) => deleteUser(ctx, params.tenantId, params.id, actor),
    audit: { action: 'user.delete', target: ({ params }) => params.id },
  }),
  endpoint({
    method: 'post',
    path: '/:id/password-reset',
    operationId: 'resetUserPassword',
    tag,
    summary: 'Admin-triggered password reset: a one-time link is mailed to the user',
    access: { anyOf: [WRITE, 'admin.humanuser.reset-password'] },
    params: UserPath,
    answer: {
      status: 202,
      description: 'mail queued',
      schema: Type.Object({ status: Type.Literal('reset-mail-sent') }),
    },
    problems: { 404: 'no such user in this tenant' },
    handle: async (ctx, { params }) => {
      await resetUserPassword(ctx, params.tenantId, params.id);
      return { status: 'reset-mail-sent' as const };
    },
    audit: { action: 'user.password-reset', target: ({ params }) => params.id },
  }),
];
