/** Policy templates, the effective policy of a tenant, and its overrides. */
import { Router } from 'express';
import type { AppContext } from '../../context.ts';
import { AppError } from '../../../shared/errors/index.ts';
import { ALL_KEY_TYPES, POLICY_TEMPLATES, effectivePolicy, type PolicyOverrides } from '../../../shared/policy.ts';
import { route } from '../../http/route.ts';
import { auditChange, tenantParam } from '../../http/params.ts';
import { authorize } from '../../middleware/authenticate.ts';
import { jsonBody } from '../../middleware/body.ts';
import { jsonColumn } from '../../../shared/db/knex.ts';
import { onlyKnown } from '../../../shared/validation/members.ts';
import { MAX_ROTATION_PERIOD_DAYS, rescheduleTenant } from '../../services/keys/settings.ts';

const OVERRIDE_MEMBERS: ReadonlySet<string> = new Set(['template', 'allowedKeyTypes', 'rotationPeriodDays']);

/** The effective policy of a tenant (used by key creation too). */
export async function tenantPolicy(ctx: AppContext, tenantId: string) {
  const tenant = await ctx.db('tenants').where({ id: tenantId }).first('policy_overrides');
  if (!tenant) throw new AppError('not_found', 'no such tenant');
  const overrides = jsonColumn<PolicyOverrides>(tenant.policy_overrides);
  return { overrides, effective: effectivePolicy(ctx.config, overrides) };
}

function validateOverrides(body: unknown): PolicyOverrides {
  if (!body || typeof body !== 'object' || Array.isArray(body)) throw new AppError('validation_failed', 'the body must be an object');
  onlyKnown(body, OVERRIDE_MEMBERS);
  const { template, allowedKeyTypes, rotationPeriodDays } = body as Record<string, unknown>;
  const out: PolicyOverrides = {};
  if (template !== undefined) {
    if (typeof template !== 'string' || !POLICY_TEMPLATES.has(template)) throw new AppError('validation_failed', `template must be one of ${[...POLICY_TEMPLATES.keys()].join(', ')}`);
    out.template = template;
  }
  if (allowedKeyTypes !== undefined) {
    if (!Array.isArray(allowedKeyTypes) || !allowedKeyTypes.every((t) => ALL_KEY_TYPES.includes(t))) throw new AppError('validation_failed', 'allowedKeyTypes must list supported key types');
    out.allowedKeyTypes = allowedKeyTypes;
  }
  if (rotationPeriodDays !== undefined) {
    if (!Number.isInteger(rotationPeriodDays) || (rotationPeriodDays as number) < 1 || (rotationPeriodDays as number) > MAX_ROTATION_PERIOD_DAYS) throw new AppError('validation_failed', `rotationPeriodDays must be an integer from 1 to ${MAX_ROTATION_PERIOD_DAYS}`);
    out.rotationPeriodDays = rotationPeriodDays as number;
  }
  return out;
}

/** Mounted at /api/v3/admin/tenants/:tenantId/policies. */
export function createPoliciesRouter(ctx: AppContext): Router {
  const router = Router({ mergeParams: true });
  route(router, '/templates', {
    get: [authorize(ctx, 'admin.policy.templates.read'), (_req, res) => {
      res.json({ items: [...POLICY_TEMPLATES].map(([name, t]) => ({ name, description: t.description, policy: t.policy })) });
    }],
  });
  route(router, '/effective', {
    get: [authorize(ctx, 'admin.policy.effective.read'), async (req, res) => {
      const { overrides, effective } = await tenantPolicy(ctx, tenantParam(req));
      res.json({ tenantId: tenantParam(req), overrides, policy: effective });
    }],
  });
  route(router, '/overrides', {
    put: [authorize(ctx, 'admin.policy.overrides.write'), ...jsonBody(ctx.config.jsonLimitBytes), async (req, res) => {
      const overrides = validateOverrides(req.body);
      const policy = effectivePolicy(ctx.config, overrides);
      await ctx.db.transaction(async (trx) => {
        await trx('tenants').where({ id: tenantParam(req) }).update({ policy_overrides: JSON.stringify(overrides) });
        // Keys that follow the policy's rotation period are due by the new one (contract 8).
        await rescheduleTenant(trx, tenantParam(req), policy.rotationPeriodDays);
      });
      auditChange(ctx, req, 'policy.overrides.update', tenantParam(req), { overrides });
      res.json({ tenantId: tenantParam(req), overrides, policy });
    }],
  });
  return router;
}
