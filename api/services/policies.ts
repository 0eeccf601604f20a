/** A tenant's policy: its stored overrides, the effective policy they give, and their change. */
import type { Knex } from 'knex';
import type { Config } from '../../shared/config/index.ts';
import type { AppContext } from '../context.ts';
import { problem } from '../../shared/errors/index.ts';
import {
  POLICY_TEMPLATES,
  effectivePolicy,
  transitMountsProblem,
  type PolicyOverrides,
} from '../../shared/policy.ts';
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
 * types, a bounded period; here, the Transit mounts' reserved names and duplicates); keys that
 * follow the policy's rotation period are due by the new one. The tenant change commits with
 * the overrides, so every instance reads the new Transit mounts; this one before answering.
 */
export async function setOverrides(
  ctx: Pick<AppContext, 'db' | 'config' | 'changes' | 'transitMounts'>,
  tenantId: string,
  overrides: PolicyOverrides,
) {
  if (overrides.vaultTransitMounts !== undefined) {
    const wrong = transitMountsProblem(overrides.vaultTransitMounts);
    if (wrong) throw problem('validation_failed', wrong);
  }
  const policy = effectivePolicy(ctx.config, overrides);
  const change = await ctx.db.transaction(async (trx) => {
    await Tenant.query(trx).findById(tenantId).patch({ policy_overrides: overrides });
    await rescheduleTenant(trx, tenantId, policy.rotationPeriodDays);
    return ctx.changes.write(trx, 'tenant', tenantId);
  });
  ctx.changes.announce(change);
  await ctx.transitMounts.refresh();
  return { tenantId, overrides, policy };
}
