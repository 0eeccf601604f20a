/** Verifies every tenant's audit hash chain through the real endpoint (POST /api/v3/audit/verify). */
import { randomUUID } from 'node:crypto';
import type { TestApp } from '../../../support/app.ts';
import { api, workloadToken } from '../../../support/auth.ts';
import { createRole } from '../../../api/services/admin/roles.ts';
import { registerWorkload } from '../../../api/services/admin/workloads.ts';

/** The tenants whose chain does not verify, with the endpoint's answer; empty when all hold. */
export async function brokenAuditChains(
  app: TestApp,
): Promise<Array<{ tenantId: string; status: number; body: unknown }>> {
  const broken: Array<{ tenantId: string; status: number; body: unknown }> = [];
  for (const { id } of await app.ctx.db('tenants').select('id')) {
    const suffix = randomUUID().slice(0, 8);
    const role = await createRole(app.ctx, id, {
      name: `audit-check-${suffix}`,
      permissions: ['audit.verify'],
    });
    const workload = await registerWorkload(app.ctx, id, {
      name: `audit-check-${suffix}`,
      roleId: role.id,
    });
    const r = await api(
      app,
      'POST',
      '/api/v3/audit/verify',
      await workloadToken(app, workload),
      {},
    );
    if (r.status !== 200 || r.body.valid !== true)
      broken.push({ tenantId: id, status: r.status, body: r.body });
  }
  return broken;
}
