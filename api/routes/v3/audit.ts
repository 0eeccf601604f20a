/**
 * The Audit API: the tenant's events (time range, actor, action, outcome, cursor pagination),
 * verification of the hash chain over a range (first broken link, or truncation against the
 * recorded head), and the head itself, for a tenant to anchor outside the service. The rows are
 * api/routes/shared/audit.ts, shared with the Admin API's copy; here they read the token's tenant.
 *
 * Tests: test/integration/audit/log.test.ts, test/integration/core/crypto.test.ts,
 *   test/integration/admin/audit.test.ts, test/integration/auth/token-abuse.test.ts,
 *   test/integration/http/canonical-input.test.ts, test/integration/http/hostile-matrix.test.ts, and
 *   3 more under test/integration/
 */
import { auditEndpoints } from '../shared/audit.ts';

/** Mounted at /api/v3/audit (after service-core authentication). */
export const AUDIT_ENDPOINTS = auditEndpoints({
  tenantOf: ({ claims }) => claims.tenantId,
  operationId: (name) => name,
  summary: (summary) => summary,
  problems: { 403: 'the role lacks the permission' },
});
