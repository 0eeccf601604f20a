/** The password grant (RFC 6749 section 4.3): a person's token for service-admin. */
import type { AppContext } from '../../../context.ts';
import { OAuthError } from '../../../../shared/errors/index.ts';
import { checkPassword } from '../passwords.ts';
import { rateKey } from '../rate-limits.ts';
import { Tenant } from '../../../../shared/db/models/tenants.ts';
import { canonicalId, isUuid } from '../../../../shared/ids.ts';
import { userActor } from '../../../../shared/audit/actor.ts';
import { required, type Grant, type TokenResponse } from './grant.ts';
import { humanTokens } from './tokens.ts';

/** The form parameters this grant reads. */
export const parameters: ReadonlySet<string> = new Set([
  'username',
  'password',
  'tenant_id',
  'remember_me',
]);

/** password: a HUMAN token for service-admin plus a rotating refresh token. */
export async function passwordGrant(
  ctx: AppContext,
  form: Record<string, string>,
  address: string,
): Promise<TokenResponse> {
  required(form, 'username', 'password', 'tenant_id');
  if (!isUuid(form.tenant_id)) throw new OAuthError('invalid_request', 'tenant_id must be a UUID');
  const { user, reason } = await checkPassword(
    ctx.db,
    ctx.pool,
    { limits: ctx.auth.limits, baseSeconds: ctx.config.lockoutBaseSeconds },
    form.tenant_id,
    form.username,
    form.password,
    address,
  );
  const tenantExists = await Tenant.query(ctx.db).findById(form.tenant_id).select('id');
  const auditTenant = tenantExists ? form.tenant_id : await ctx.auth.platformTenantId();
  if (!user) {
    ctx.audit.record({
      tenantId: auditTenant,
      actor: userActor(form.username.toLowerCase().slice(0, 254)),
      action: 'auth.token.password',
      outcome: 'failure',
      details: { reason },
    });
    // One answer for every failure (RFC 6749 5.2 invalid_grant): no hint whether the user exists or is locked.
    throw new OAuthError('invalid_grant', 'the username or password is not valid');
  }
  ctx.audit.record({
    tenantId: user.tenantId,
    actor: userActor(user.id),
    action: 'auth.token.password',
    outcome: 'success',
  });
  return humanTokens(ctx, user, form.remember_me === 'true');
}

export const grant: Grant = {
  parameters,
  // Per address too: a guesser elsewhere must not spend the owner's budget (see passwords.ts).
  rateKey: async (_ctx, form, address) =>
    rateKey(
      'user',
      canonicalId(form.tenant_id ?? ''),
      (form.username ?? '').toLowerCase(),
      address,
    ),
  run: passwordGrant,
};
