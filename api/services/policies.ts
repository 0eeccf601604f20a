/** A tenant's policy: its stored overrides, the effective policy they give, and their change. */
import type { Knex } from 'knex';
import type { Config } from '../../shared/config/index.ts';
import { problem } from '../../shared/errors/index.ts';
import { POLICY_TEMPLATES, effectivePolicy, type PolicyOverrides } from '../../shared/policy.ts';
import { Tenant } from '../../shared/db/models/tenants.ts';
import { rescheduleTenant } from './keys/settings.ts';

/** The effective policy of a tenant (key creation, import, rotation and the policy routes). */
export async function tenantPolicy(ctx: { db: Knex; config: Config }, tenantId: string) {
  const tenant = await Tenant.query(ctx.db).findById(tenantId).select('policy_overrides');
  if (!tenant) throw problem('not_found', 'no such tenant');
  const overrides = tenant.policy_overrides;
  return { overrides, effective: effectivePolicy(ctx.config, overrides) };
}

/** The policy templates a tenant may start from. */
export const policyTemplates = () => ({
  items: [...POLICY_TEMPLATES].map(([name, t]) => ({
    name,
    description: t.description,
    policy: t.policy,
  })),
});

/**
 * Replaces a tenant's overrides (checked by the route's schema: catalogued template and key
 * types, a bounded period); keys that follow the policy's rotation period are due by the new one. */
export async function setOverrides(
  ctx: { db: Knex; config: Config },
  tenantId: string,
  overrides: PolicyOverrides,
) {
  const policy = effectivePolicy(ctx.config, overrides);
  await ctx.db.transaction(async (trx) => {
    await Tenant.query(trx).findById(tenantId).patch({ policy_overrides: overrides });
    await rescheduleTenant(trx, tenantId, policy.rotationPeriodDays);
  });
  return { tenantId, overrides, policy };
}
