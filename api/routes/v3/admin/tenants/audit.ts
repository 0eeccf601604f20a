/**
 * The audit log of a tenant for the people who run it (the console): the events, the
 * verification of the chain and its head, as on /api/v3/audit but with the tenant in the path
 * and a service-admin token, like the rest of the Admin API (the audit API itself
 * stays service-core). A platform administrator with cross-tenant power reads any tenant's.
 *
 * Tests: test/integration/admin/audit.test.ts
 */
import Type from 'typebox';
import { auditEndpoints } from '../../../shared/audit.ts';
import { TENANT_PARAM } from '../../../../schemas/common.ts';

/** Mounted at /api/v3/admin/tenants/:tenantId/audit. */
export const TENANT_AUDIT_ENDPOINTS = auditEndpoints({
  params: Type.Object(TENANT_PARAM),
  tenantOf: ({ params }) => (params as { tenantId: string }).tenantId,
  operationId: (name) => `admin${name[0].toUpperCase()}${name.slice(1)}`,
  summary: (summary) => `${summary} (Admin API: the tenant in the path, for people)`,
  problems: {
    403: "the role lacks the permission, or the tenant is not the token's",
    404: 'no such tenant',
  },
});
