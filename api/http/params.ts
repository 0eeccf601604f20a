/** Typed access to route parameters (Express 5 types them as string | string[]). */
import type { Request } from 'express';
import type { AppContext } from '../context.ts';
import { actorOf } from '../middleware/authenticate.ts';

/** A route parameter as a string. */
export function param(req: Request, name: string): string {
  const v = req.params[name];
  return Array.isArray(v) ? v.join('/') : String(v ?? '');
}

/** The tenant of a tenant-scoped admin path. */
export const tenantParam = (req: Request) => param(req, 'tenantId');

/** Audits a successful admin change in the path's tenant. */
export function auditChange(ctx: AppContext, req: Request, action: string, target: string, details?: Record<string, unknown>): void {
  ctx.audit.record({ tenantId: tenantParam(req), actor: actorOf(req), action, outcome: 'success', target, details });
}
