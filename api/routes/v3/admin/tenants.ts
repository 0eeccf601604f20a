/**
 * GET /api/v3/admin/tenants/{tenantId}: a tenant's own record.
 *
 * Tests: test/integration/admin/isolation.test.ts, test/integration/admin/identities.test.ts,
 *   test/integration/admin/key-settings.test.ts, test/integration/admin/one-rule.test.ts,
 *   test/integration/http/canonical-input.test.ts
 */
import Type from 'typebox';
import { endpoint } from '../../../rows/endpoint.ts';
import { TENANT_PARAM, TenantResource } from '../../../schemas/common.ts';
import { readTenant } from '../../../services/admin/tenants.ts';

/** Mounted at /api/v3/admin/tenants/:tenantId (after the tenant-scope check of the route table). */
export const TENANT_SELF_ENDPOINTS = [
  endpoint({
    method: 'get',
    path: '/',
    operationId: 'getOwnTenant',
    tag: 'tenants',
    summary: "The tenant's own record",
    access: { anyOf: ['admin.tenant.read'] },
    params: Type.Object(TENANT_PARAM),
    answer: { status: 200, description: 'the tenant', schema: TenantResource },
    problems: { 404: 'no such tenant' },
    handle: (ctx, { params }) => readTenant(ctx.db, params.tenantId),
  }),
];
