/** A tenant's policy: its stored overrides, the effective policy they give, and their change (contract 8). */
import type { Knex } from 'knex';
import type { Config } from '../../shared/config/index.ts';
import { problem } from '../../shared/errors/index.ts';
import {
  ALL_KEY_TYPES,
  POLICY_TEMPLATES,
  effectivePolicy,
  type PolicyOverrides,
} from '../../shared/policy.ts';
import { Tenant } from '../../shared/db/models/tenants.ts';
import { onlyKnown } from '../../shared/validation/members.ts';
import { MAX_ROTATION_PERIOD_DAYS, rescheduleTenant } from './keys/settings.ts';

const OVERRIDE_MEMBERS: ReadonlySet<string> = new Set([
  'template',
  'allowedKeyTypes',
  'rotationPeriodDays',
]);

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

/** Reads a body of overrides: known members only, templates and key types from the catalogue, a bounded rotation period. */
export function readOverrides(body: unknown): PolicyOverrides {
  if (!body || typeof body !== 'object' || Array.isArray(body))
    throw problem('validation_failed', 'the body must be an object');
  onlyKnown(body, OVERRIDE_MEMBERS);
  const { template, allowedKeyTypes, rotationPeriodDays } = body as Record<string, unknown>;
  const out: PolicyOverrides = {};
  if (template !== undefined) {
    if (typeof template !== 'string' || !POLICY_TEMPLATES.has(template))
      throw problem(
        'validation_failed',
        `template must be one of ${[...POLICY_TEMPLATES.keys()].join(', ')}`,
      );
    out.template = template;
  }
  if (allowedKeyTypes !== undefined) {
    if (!Array.isArray(allowedKeyTypes) || !allowedKeyTypes.every((t) => ALL_KEY_TYPES.includes(t)))
      throw problem('validation_failed', 'allowedKeyTypes must list supported key types');
    out.allowedKeyTypes = allowedKeyTypes;
  }
  if (rotationPeriodDays !== undefined) {
    if (
      !Number.isInteger(rotationPeriodDays) ||
      (rotationPeriodDays as number) < 1 ||
      (rotationPeriodDays as number) > MAX_ROTATION_PERIOD_DAYS
    )
      throw problem(
        'validation_failed',
        `rotationPeriodDays must be an integer from 1 to ${MAX_ROTATION_PERIOD_DAYS}`,
      );
    out.rotationPeriodDays = rotationPeriodDays as number;
  }
  return out;
}

/** Replaces a tenant's overrides; keys that follow the policy's rotation period are due by the new one. */
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
