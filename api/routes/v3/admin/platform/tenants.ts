/**
 * Platform tenants: create, list, read, suspend, resume.
 *
 * Tests: test/integration/admin/identities.test.ts, test/integration/admin/isolation.test.ts,
 *   test/e2e/console.test.ts, test/integration/admin/key-settings.test.ts,
 *   test/integration/auth/token-abuse.test.ts, test/integration/http/canonical-input.test.ts
 */
import Type from 'typebox';
import { endpoint } from '../../../../rows/endpoint.ts';
import { pageRequest } from '../../../../rows/pagination.ts';
import {
  PageOf,
  PageQuery,
  TenantResource,
  idParam,
  NewTenant,
} from '../../../../schemas/common.ts';
import {
  createTenant,
  listTenants,
  readTenant,
  setTenantStatus,
} from '../../../../services/admin/tenants.ts';

const TenantPath = Type.Object(idParam('tenant'));
const READ = { anyOf: ['admin.platform.tenants.read'] } as const;
const tag = 'platform';

/** Suspending ends the tenant's logins on every instance at once; resuming lets them in again. */
const setStatus = (
  action: 'suspend' | 'resume',
  status: 'suspended' | 'active',
  summary: string,
  notFound: string,
) =>
  endpoint({
    method: 'post',
    path: `/:id/${action}`,
    operationId: `${action}Tenant`,
    tag,
    summary,
    access: { anyOf: ['admin.platform.tenants.suspend'] },
    params: TenantPath,
    answer: { status: 200, description: 'the tenant', schema: TenantResource },
    problems: { 404: notFound },
    handle: (ctx, { params }) => setTenantStatus(ctx, params.id, status),
    // In the chain of the tenant it changed, which its own auditors read.
    audit: {
      action: `tenant.${action}`,
      target: (_input, tenant) => tenant.id,
      tenant: (_input, tenant) => tenant.id,
    },
  });

/** Mounted at /api/v3/admin/platform/tenants. */
export const PLATFORM_TENANT_ENDPOINTS = [
  endpoint({
    method: 'get',
    path: '/',
    operationId: 'listTenants',
    tag,
    summary: 'List tenants',
    access: READ,
    query: PageQuery,
    answer: { status: 200, description: 'tenants', schema: PageOf(TenantResource) },
    handle: (ctx, { query }) => listTenants(ctx.db, pageRequest(query)),
  }),
  endpoint({
    method: 'post',
    path: '/',
    operationId: 'createTenant',
    tag,
    summary: 'Create a tenant',
    access: { anyOf: ['admin.platform.tenants.create'] },
    body: NewTenant,
    answer: { status: 201, description: 'the tenant', schema: TenantResource },
    handle: (ctx, { body }) => createTenant(ctx, body),
    // One event in the platform's chain, and the first of the new tenant's own chain.
    audit: [
      { action: 'platform.tenant.create', target: (_input, tenant) => tenant.id },
      {
        action: 'tenant.created',
        target: (_input, tenant) => tenant.id,
        tenant: (_input, tenant) => tenant.id,
      },
    ],
  }),
  endpoint({
    method: 'get',
    path: '/:id',
    operationId: 'getTenant',
    tag,
    summary: 'Read a tenant',
    access: READ,
    params: TenantPath,
    answer: { status: 200, description: 'the tenant', schema: TenantResource },
    problems: { 404: 'no such tenant' },
    handle: (ctx, { params }) => readTenant(ctx.db, params.id),
  }),
  setStatus(
    'suspend',
    'suspended',
    'Suspend a tenant: its workloads can no longer log in (401 invalid_client)',
    'no such tenant, or the platform tenant',
  ),
  setStatus('resume', 'active', 'Resume a suspended tenant', 'no such tenant'),
];
