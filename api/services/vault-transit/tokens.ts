/**
 * Transit's token paths over Keyward's access tokens: the AppRole login a workload (or Vault's
 * and OpenBao's agents) makes with its client credential (role_id = client id, secret_id = client
 * secret) is the token endpoint's client_credentials grant, with its budgets and audit; the token
 * it answers is the Keyward access token every API takes. lookup-self and renew-self answer what
 * the token holds: it is not renewable (a signed token's expiry is fixed), so Vault's and
 * OpenBao's transit seal and agents log in again instead of renewing (docs/vault-transit.md).
 */
import type { AppContext } from '../../context.ts';
import type { AccessClaims } from '../auth/access-tokens.ts';
import { issueToken } from '../auth/token-endpoint.ts';
import { invalidRequest, VaultError } from './errors.ts';

const POLICIES = ['default'];

/** The `auth` member of a login or renewal: the token, its remaining lifetime, not renewable. */
function authOf(token: string, ttl: number, tenantId: string, entity: string) {
  return {
    client_token: token,
    accessor: '',
    policies: POLICIES,
    token_policies: POLICIES,
    metadata: { tenant_id: tenantId },
    lease_duration: ttl,
    renewable: false,
    entity_id: entity,
    token_type: 'service',
    orphan: true,
    mfa_requirement: null,
    num_uses: 0,
  };
}

const remaining = (claims: AccessClaims) => Math.max(0, claims.exp - Math.floor(Date.now() / 1000));

/** POST auth/approle/login `{role_id, secret_id}` → `{auth}`; Vault's 400 for any refused credential. */
export async function login(ctx: AppContext, input: Record<string, unknown>, address: string) {
  const { role_id: roleId, secret_id: secretId } = input;
  if (typeof roleId !== 'string' || roleId === '') throw invalidRequest('missing role_id');
  if (typeof secretId !== 'string' || secretId === '') throw invalidRequest('missing secret_id');
  let issued: { access_token: string; expires_in: number };
  try {
    issued = await issueToken(ctx, {
      form: { grant_type: 'client_credentials', client_id: roleId, client_secret: secretId },
      authorization: undefined,
      address,
    });
  } catch (err) {
    const e = err as { status?: number; headers?: Record<string, string> };
    if (e.status === 429)
      throw new VaultError(
        429,
        'too many failed logins; retry later',
        Number(e.headers?.['Retry-After'] ?? 60),
      );
    if (typeof e.status === 'number' && e.status < 500)
      throw invalidRequest('invalid role or secret ID');
    throw err;
  }
  const claims = ctx.auth.tokens.verify(issued.access_token);
  return {
    auth: authOf(issued.access_token, issued.expires_in, claims?.tenantId ?? '', claims?.sub ?? ''),
  };
}

/** GET auth/token/lookup-self → `{data}`: what the token is, as Vault's agents read it. */
export function lookupSelf(claims: AccessClaims, token: string) {
  return {
    accessor: '',
    creation_time: claims.iat,
    creation_ttl: claims.exp - claims.iat,
    display_name: `keyward-${claims.kind}`,
    entity_id: claims.sub,
    expire_time: new Date(claims.exp * 1000).toISOString(),
    explicit_max_ttl: 0,
    id: token,
    issue_time: new Date(claims.iat * 1000).toISOString(),
    meta: { tenant_id: claims.tenantId },
    num_uses: 0,
    orphan: true,
    path: 'auth/approle/login',
    policies: POLICIES,
    renewable: false,
    ttl: remaining(claims),
    type: 'service',
  };
}

/** POST auth/token/renew-self → `{auth}`: the same token and its remaining lifetime, not renewable. */
export function renewSelf(claims: AccessClaims, token: string) {
  return { auth: authOf(token, remaining(claims), claims.tenantId, claims.sub) };
}
