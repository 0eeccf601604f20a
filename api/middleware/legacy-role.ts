/**
 * The legacy role check of the unversioned API (spec 4.2): the legacy role names are checked
 * against the token's `scopes`, and a missing role answers 401 (spec 5.12), unlike the v3
 * APIs' 403.
 */
import type { RequestHandler } from 'express';
import type { AppContext } from '../context.ts';
import { problem } from '../../shared/errors/index.ts';

/** 401 unless the legacy token carries the role. */
export function legacyRole(ctx: AppContext, role: string): RequestHandler {
  return (req, _res, next) => {
    if (!req.auth.scopes?.includes(role)) {
      ctx.audit.record({
        tenantId: req.auth.tenantId,
        actor: `${req.auth.kind}:${req.auth.sub}`,
        action: 'access',
        outcome: 'denied',
        target: `${req.method} ${req.originalUrl.split('?')[0]}`,
        details: { missingRole: role },
      });
      throw problem('unauthorized', `the token lacks the role ${role}`, {
        headers: { 'WWW-Authenticate': 'Bearer realm="keyward", error="insufficient_scope"' },
      });
    }
    next();
  };
}
