/**
 * The access rule a route row declares, and its one check: the Express rows, the runtime
 * operations and the runtime lane all run it, so a rule cannot mean two things on two stacks.
 */
import type { AppContext } from '../context.ts';
import type { AccessClaims } from '../services/auth/access-tokens.ts';
import { requireAnyPermission, requirePermissions, type AccessAttempt } from './checks.ts';
import { requireLegacyRole } from './legacy-role.ts';

/**
 * Who may call: a token holding any one of `anyOf` (the first is the full permission, the rest
 * narrower siblings such as `admin.humanuser.read`). The area's audience and the tenant scope
 * are checked by the route table before the row runs.
 */
export type Access =
  | { anyOf: readonly [string, ...string[]] }
  /** Every one of the permissions (an operation that is two things at once, e.g. re-encrypting decrypts). */
  | { allOf: readonly [string, ...string[]] }
  /** The unversioned API: a legacy role name in the token's scopes; 401 without it. */
  | { legacyRole: string }
  /** No token at all; the text says why the endpoint is open (documented as the operation's access). */
  | { open: string };

/** Throws the refusal (audited) unless the claims meet the rule; an open rule asks for nothing. */
export function checkAccess(
  ctx: AppContext,
  rule: Access,
  claims: AccessClaims,
  attempt: AccessAttempt,
): void {
  if ('legacyRole' in rule) requireLegacyRole(ctx, claims, rule.legacyRole, attempt);
  else if ('anyOf' in rule) requireAnyPermission(ctx, claims, rule.anyOf, attempt);
  else if ('allOf' in rule) requirePermissions(ctx, claims, rule.allOf, attempt);
}
