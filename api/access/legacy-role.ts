/**
 * The legacy role check of the unversioned API: the legacy role names are checked
 * against the token's `scopes`, and a missing role answers 401, unlike the v3
 * APIs' 403.
 */
import type { AppContext } from '../context.ts';
import type { AccessClaims } from '../services/auth/access-tokens.ts';
import { problem } from '../../shared/errors/index.ts';
import type { AccessAttempt } from './checks.ts';
import { subjectActor } from '../../shared/audit/actor.ts';

/** 401 unless the legacy token carries the role (transport-free: the runtime core calls it too). */
export function requireLegacyRole(
  ctx: AppContext,
  claims: AccessClaims,
  role: string,
  attempt: AccessAttempt,
): void {
  if (claims.scopes?.includes(role)) return;
  ctx.audit.record({
    tenantId: claims.tenantId,
    actor: subjectActor(claims),
    action: 'access',
    outcome: 'denied',
    target: `${attempt.method} ${attempt.path}`,
    details: { missingRole: role },
  });
  throw problem('unauthorized', `the token lacks the role ${role}`, {
    headers: { 'WWW-Authenticate': 'Bearer realm="keyward", error="insufficient_scope"' },
  });
}
