/** Policy templates, the effective policy of a tenant, and its overrides. */
import { Router } from 'express';
import type { AppContext } from '../../../../context.ts';
import {
  policyTemplates,
  readOverrides,
  setOverrides,
  tenantPolicy,
} from '../../../../services/policies.ts';
import { route } from '../../../../http/route.ts';
import { auditChange, tenantParam } from '../../../../http/params.ts';
import { authorize } from '../../../../middleware/authenticate.ts';
import { jsonBody } from '../../../../middleware/body.ts';

/** Mounted at /api/v3/admin/tenants/:tenantId/policies. */
export function createPoliciesRouter(ctx: AppContext): Router {
  const router = Router({ mergeParams: true });
  route(router, '/templates', {
    get: [
      authorize(ctx, 'admin.policy.templates.read'),
      (_req, res) => {
        res.json(policyTemplates());
      },
    ],
  });
  route(router, '/effective', {
    get: [
      authorize(ctx, 'admin.policy.effective.read'),
      async (req, res) => {
        const { overrides, effective } = await tenantPolicy(ctx, tenantParam(req));
        res.json({ tenantId: tenantParam(req), overrides, policy: effective });
      },
    ],
  });
  route(router, '/overrides', {
    put: [
      authorize(ctx, 'admin.policy.overrides.write'),
      ...jsonBody(ctx.config.jsonLimitBytes),
      async (req, res) => {
        const result = await setOverrides(ctx, tenantParam(req), readOverrides(req.body));
        auditChange(ctx, req, 'policy.overrides.update', tenantParam(req), {
          overrides: result.overrides,
        });
        res.json(result);
      },
    ],
  });
  return router;
}
