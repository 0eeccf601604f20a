/**
 * The token pairs grants hand out to people (service-admin, with a rotating refresh token) and to
 * legacy workloads (the legacy audience and role names).
 */
import { randomUUID } from 'node:crypto';
import type { AppContext } from '../../../context.ts';
import { legacyScopesFor } from '../../../../shared/permissions.ts';
import { AUDIENCE_ADMIN, AUDIENCE_LEGACY } from '../access-tokens.ts';
import { issueRefreshToken } from '../refresh-tokens.ts';
import type { WorkloadCredentials } from '../client-secrets.ts';
import type { TokenResponse } from './grant.ts';

const HUMAN_CLIENT = 'keyward-admin';

/** Access and refresh token of a person: service-admin, `fam` naming the refresh family. */
export async function humanTokens(
  ctx: AppContext,
  user: { id: string; tenantId: string; permissions: string[] },
  rememberMe: boolean,
  familyId: string = randomUUID(),
): Promise<TokenResponse> {
  const ttl = ctx.config.humanTokenTtl;
  // `fam` names the refresh-token family: when the family is revoked, its access tokens die too.
  const { token } = await ctx.auth.tokens.issue(
    {
      sub: user.id,
      aud: AUDIENCE_ADMIN,
      tenantId: user.tenantId,
      permissions: user.permissions,
      client_id: HUMAN_CLIENT,
      kind: 'user',
      fam: familyId,
    },
    ttl,
  );
  const refreshTtl = rememberMe ? ctx.config.rememberMeRefreshTtl : ctx.config.refreshTokenTtl;
  const refresh = await issueRefreshToken(
    ctx.db,
    {
      tenantId: user.tenantId,
      subjectKind: 'user',
      subjectId: user.id,
      audience: AUDIENCE_ADMIN,
      rememberMe,
    },
    refreshTtl,
    familyId,
  );
  return { access_token: token, token_type: 'Bearer', expires_in: ttl, refresh_token: refresh };
}

/** Access and refresh token of the legacy JSON login: legacy role names in `scopes`. */
export async function legacyTokens(
  ctx: AppContext,
  creds: WorkloadCredentials,
  familyId: string = randomUUID(),
): Promise<TokenResponse> {
  const ttl = ctx.config.accessTokenTtl;
  const { token } = await ctx.auth.tokens.issue(
    {
      sub: creds.workloadId,
      aud: AUDIENCE_LEGACY,
      tenantId: creds.tenantId,
      permissions: creds.permissions,
      scopes: legacyScopesFor(creds.permissions),
      client_id: creds.clientId,
      kind: 'workload',
      fam: familyId,
    },
    ttl,
  );
  const refresh = await issueRefreshToken(
    ctx.db,
    {
      tenantId: creds.tenantId,
      subjectKind: 'workload',
      subjectId: creds.workloadId,
      audience: AUDIENCE_LEGACY,
      rememberMe: false,
    },
    ctx.config.refreshTokenTtl,
    familyId,
  );
  return { access_token: token, token_type: 'Bearer', expires_in: ttl, refresh_token: refresh };
}
