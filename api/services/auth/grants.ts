/**
 * The four grants of the token endpoint, one function each. Each returns the token response
 * (RFC 6749 section 5.1) or throws an OAuthError with its RFC 6749 code. Every attempt is audited.
 */
import { randomUUID } from 'node:crypto';
import type { AppContext } from '../../context.ts';
import { OAuthError } from '../../../shared/errors/index.ts';
import { isPlatformPermission, legacyScopesFor } from '../../../shared/permissions.ts';
import {
  AUDIENCE_ADMIN,
  AUDIENCE_CORE,
  AUDIENCE_LEGACY,
  type AccessClaims,
} from './access-tokens.ts';
import { checkPassword, loadUser } from './passwords.ts';
import { issueRefreshToken, redeemRefreshToken, refreshFamilyOf } from './refresh-tokens.ts';
import { rateKey } from './rate-limits.ts';
import type { WorkloadCredentials } from './client-secrets.ts';
import { Tenant } from '../../../shared/db/models/tenants.ts';
import { Workload } from '../../../shared/db/models/identities.ts';
import { UUID_SOURCE, canonicalId, isUuid } from '../../../shared/ids.ts';
import {
  REFRESH_TOKEN_ACTOR,
  UNKNOWN_CLIENT_ACTOR,
  clientActor,
  subjectActor,
  userActor,
} from '../../../shared/audit/actor.ts';

export interface TokenResponse {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  refresh_token?: string;
  passwordChangeEligible?: boolean;
  issued_token_type?: string;
}

const HUMAN_CLIENT = 'keyward-admin';

/**
 * The budget key of a workload's authentication from one address: the (client, address) pair,
 * as the password lockout is keyed, so wrong secrets sent from one address never refuse the
 * right secret sent from another (else ten wrong secrets a minute from anyone who knew a client
 * id would lock the workload out). A client id that names no workload spends the budget of
 * its sender's address, as a refresh token naming no family does (were every made-up id given
 * a budget of its own, one address could try ids without limit). The lookup is the
 * grant's own, cached for known clients. The client id is canonical (lower-case) as the lookup
 * sees it; a known one is a UUID and the socket address is bounded, so neither is hashed.
 */
export async function clientRateKey(
  ctx: AppContext,
  clientId: string | undefined,
  address: string,
): Promise<string> {
  const id = canonicalId(clientId ?? '');
  const known = isUuid(id) && (await ctx.auth.secrets.lookup(id)) !== null;
  return known ? `client:${id}@${address}` : rateKey('address', address);
}

/**
 * The budget key of a refresh token: its family, so failures of other people's garbage never
 * spend it; a token that names no family spends the budget of its sender's address.
 */
export async function refreshRateKey(
  ctx: AppContext,
  token: string | undefined,
  address: string,
): Promise<string> {
  const family = token ? await refreshFamilyOf(ctx.db, token) : null;
  return family ? rateKey('refresh', family) : rateKey('address', address);
}

/** How a client authenticated at the token endpoint (RFC 6749 2.3.1; RFC 8414 token_endpoint_auth_methods_supported). */
export interface ClientAuth {
  clientId: string;
  clientSecret: string;
  method: 'client_secret_basic' | 'client_secret_post';
}

/**
 * The one challenge of every failed client authentication (RFC 7617: credentials are UTF-8),
 * whatever failed: a header that differed between an unknown client and a known one with a wrong
 * secret told which client ids exist.
 */
export const BASIC_CHALLENGE = 'Basic realm="keyward", charset="UTF-8"';

/** The 401 of a failed client authentication: RFC 6749 5.2 requires 401 with a challenge for the scheme used. */
export const basicFailure = (description: string) =>
  new OAuthError('invalid_client', description, 401, { 'WWW-Authenticate': BASIC_CHALLENGE });

/** application/x-www-form-urlencoded decoding of one credential part (RFC 6749 2.3.1, appendix B). */
function formDecode(part: string): string {
  try {
    return decodeURIComponent(part.replace(/\+/g, ' '));
  } catch {
    throw basicFailure('the Basic credentials are not form-urlencoded');
  }
}

/**
 * Client credentials from an `Authorization: Basic` header (client_secret_basic, RFC 6749
 * 2.3.1): base64 of `urlencode(client_id):urlencode(client_secret)`. Null when the header is
 * absent or of another scheme; a Basic header that does not decode is a failed authentication.
 */
export function basicClientAuth(header: string | undefined): ClientAuth | null {
  // The scheme name is case-insensitive (RFC 9110 11.1); the credentials are token68 (base64).
  if (!header || !/^basic( |$)/i.test(header)) return null;
  const match = /^basic +([A-Za-z0-9+/=._~-]*) *$/i.exec(header);
  if (!match) throw basicFailure('the Basic credentials are malformed');
  const decoded = Buffer.from(match[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 1) throw basicFailure('the Basic credentials must be client_id:client_secret');
  return {
    clientId: formDecode(decoded.slice(0, colon)),
    clientSecret: formDecode(decoded.slice(colon + 1)),
    method: 'client_secret_basic',
  };
}

/**
 * The client authentication of a token request: the Basic header or the form fields, never both
 * (RFC 6749 2.3: one method per request). A client_id in the form beside Basic is accepted only
 * when it names the same client.
 */
export function clientAuthOf(
  header: string | undefined,
  form: Record<string, string>,
): ClientAuth | null {
  const basic = basicClientAuth(header);
  if (!basic) {
    return form.client_id !== undefined || form.client_secret !== undefined
      ? {
          clientId: form.client_id ?? '',
          clientSecret: form.client_secret ?? '',
          method: 'client_secret_post',
        }
      : null;
  }
  if (
    form.client_secret !== undefined ||
    (form.client_id !== undefined && canonicalId(form.client_id) !== canonicalId(basic.clientId))
  ) {
    throw new OAuthError(
      'invalid_request',
      'the client authenticated both in the Authorization header and in the body; use one method (RFC 6749 2.3)',
    );
  }
  return basic;
}

function required(form: Record<string, string>, ...fields: string[]): void {
  for (const f of fields)
    if (typeof form[f] !== 'string' || form[f] === '')
      throw new OAuthError('invalid_request', `${f} is required`);
}

/** Actor of the tallied failures naming no known client: never the sender's text. */

/**
 * Authenticates a workload: 401 invalid_client when unknown or disabled, 400 invalid_grant on a
 * wrong secret in the body; over HTTP Basic a wrong secret is 401 invalid_client with
 * a Basic challenge, as RFC 6749 5.2 requires for the Authorization header. Failures naming no
 * known client are tallied per address, not recorded one by one.
 */
export async function authenticateWorkload(
  ctx: AppContext,
  anyCaseClientId: string,
  clientSecret: string,
  address: string,
  method: ClientAuth['method'] = 'client_secret_post',
  action = 'auth.token.client_credentials',
): Promise<WorkloadCredentials> {
  const clientId = canonicalId(anyCaseClientId);
  const creds = isUuid(clientId) ? await ctx.auth.secrets.lookup(clientId) : null;
  // The secret is checked whatever the client is (against a dummy when there is none), so an
  // unknown, a disabled and a known client cost the same: the time of the answer names no id.
  const secretMatches = ctx.auth.secrets.matches(creds, clientSecret);
  if (!creds) {
    // Anyone can send made-up ids: one chained event per address and tally window with its
    // count, and the actor is ours, never the sender's text (not one event per request with
    // the attacker's string as actor, in the platform tenant's chain).
    ctx.audit.tally({
      tenantId: await ctx.auth.platformTenantId(),
      actor: UNKNOWN_CLIENT_ACTOR,
      action,
      outcome: 'failure',
      target: `address:${address}`,
    });
    throw basicFailure('client authentication failed');
  }
  if (creds.disabled || !creds.tenantActive) {
    ctx.audit.record({
      tenantId: creds.tenantId,
      actor: clientActor(creds.clientId),
      action,
      outcome: 'failure',
      details: { reason: 'disabled' },
    });
    throw basicFailure('client authentication failed');
  }
  if (!secretMatches) {
    ctx.audit.record({
      tenantId: creds.tenantId,
      actor: clientActor(clientId),
      action,
      outcome: 'failure',
      details: { reason: 'wrong-secret', method },
    });
    if (method === 'client_secret_basic') throw basicFailure('client authentication failed');
    throw new OAuthError('invalid_grant', 'the client credentials are not valid');
  }
  return creds;
}

/** client_credentials: an APPLICATION token for service-core, 36000 s, no refresh token; the client authenticates by form fields or HTTP Basic. */
export async function clientCredentialsGrant(
  ctx: AppContext,
  form: Record<string, string>,
  address: string,
  client: ClientAuth | null = clientAuthOf(undefined, form),
): Promise<TokenResponse> {
  if (client?.method !== 'client_secret_basic') required(form, 'client_id', 'client_secret');
  else if (client.clientId === '') throw basicFailure('the Basic credentials name no client');
  const creds = await authenticateWorkload(
    ctx,
    client!.clientId,
    client!.clientSecret,
    address,
    client!.method,
  );
  const ttl = ctx.config.accessTokenTtl;
  const { token } = await ctx.auth.tokens.issue(
    {
      sub: creds.workloadId,
      aud: AUDIENCE_CORE,
      tenantId: creds.tenantId,
      permissions: creds.permissions,
      client_id: creds.clientId,
      kind: 'workload',
    },
    ttl,
  );
  // Successful machine logins come at thousands per second: tallied (one chained event per
  // client per flush window with its count), failures stay one event each.
  ctx.audit.tally({
    tenantId: creds.tenantId,
    actor: clientActor(creds.clientId),
    action: 'auth.token.client_credentials',
    outcome: 'success',
  });
  return {
    access_token: token,
    token_type: 'Bearer',
    expires_in: ttl,
    passwordChangeEligible: false,
  };
}

async function humanTokens(
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

/** refresh_token: rotates the refresh token; reuse revokes the family. Keeps the parent's audience. */
export async function refreshTokenGrant(
  ctx: AppContext,
  form: Record<string, string>,
  onlyAudience?: string,
): Promise<TokenResponse> {
  required(form, 'refresh_token');
  const result = await redeemRefreshToken(ctx.db, form.refresh_token, onlyAudience);
  if (!result.ok) {
    const tenantId = result.tenantId ?? (await ctx.auth.platformTenantId());
    ctx.audit.record({
      tenantId,
      actor: REFRESH_TOKEN_ACTOR,
      action:
        result.reason === 'reused' ? 'auth.refresh.reuse-detected' : 'auth.token.refresh_token',
      outcome: 'failure',
      details: { reason: result.reason, familyId: result.familyId },
    });
    if (result.reason === 'reused' && result.familyId) {
      // RFC 9700 4.14.2: the family is compromised; so are the access tokens issued from it.
      await ctx.auth.revokeFamilyTokens(result.familyId, tenantId, 'refresh token reuse');
      ctx.logger.warn(
        { familyId: result.familyId, tenantId },
        'refresh token reuse detected; family and its access tokens revoked',
      );
    }
    throw new OAuthError('invalid_grant', 'the refresh token is not valid');
  }
  const { subject, familyId } = result;
  if (subject.subjectKind === 'user') {
    const user = await loadUser(ctx.db, { id: subject.subjectId });
    if (!user || user.disabled)
      throw new OAuthError('invalid_grant', 'the refresh token is not valid');
    ctx.audit.record({
      tenantId: user.tenantId,
      actor: userActor(user.id),
      action: 'auth.token.refresh_token',
      outcome: 'success',
    });
    return humanTokens(ctx, user, subject.rememberMe, familyId);
  }
  const workload = await Workload.query(ctx.db).findById(subject.subjectId).select('client_id');
  const creds = workload ? await ctx.auth.secrets.lookup(workload.client_id) : null;
  if (!creds || creds.disabled)
    throw new OAuthError('invalid_grant', 'the refresh token is not valid');
  ctx.audit.record({
    tenantId: creds.tenantId,
    actor: clientActor(creds.clientId),
    action: 'auth.token.refresh_token',
    outcome: 'success',
  });
  return legacyTokens(ctx, creds, familyId);
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

const RESOURCE = new RegExp(`^urn:keyward:tenant:(${UUID_SOURCE}):(admin|core)$`, 'i');

/** RFC 8693 token exchange: act in a tenant (own, or any with the platform permission); 900 s, `act` claim. */
export async function tokenExchangeGrant(
  ctx: AppContext,
  form: Record<string, string>,
): Promise<TokenResponse> {
  required(form, 'subject_token', 'resource');
  if (
    form.subject_token_type &&
    form.subject_token_type !== 'urn:ietf:params:oauth:token-type:access_token'
  ) {
    throw new OAuthError(
      'invalid_request',
      'subject_token_type must be urn:ietf:params:oauth:token-type:access_token',
    );
  }
  const match = RESOURCE.exec(form.resource);
  if (!match)
    throw new OAuthError(
      'invalid_target',
      'resource must be urn:keyward:tenant:<tenantId>:admin or :core',
    );
  const subject: AccessClaims | null = await ctx.auth.tokens.verifyFresh(form.subject_token);
  // Delegated tokens cannot be exchanged again, and legacy tokens never become v3 tokens.
  if (!subject || subject.act || subject.aud === AUDIENCE_LEGACY)
    throw new OAuthError('invalid_grant', 'the subject token is not valid');
  const [, targetTenant, flavour] = match;
  const audience = flavour.toLowerCase() === 'admin' ? AUDIENCE_ADMIN : AUDIENCE_CORE;
  // Exchange moves a token between tenants, never between audiences: an APPLICATION token stays
  // a service-core token and a HUMAN token a service-admin token.
  if (audience !== subject.aud)
    throw new OAuthError(
      'invalid_target',
      `a ${subject.aud} token can only be exchanged for a ${subject.aud} token`,
    );
  const target = targetTenant.toLowerCase();
  const sameTenant = target === subject.tenantId;
  const allowed = sameTenant
    ? subject.permissions.includes('auth.token-exchange') ||
      subject.permissions.includes('admin.platform.token-exchange')
    : subject.permissions.includes('admin.platform.token-exchange');
  const tenant = await Tenant.query(ctx.db).findOne({ id: target, status: 'active' }).select('id');
  if (!allowed || !tenant) {
    ctx.audit.record({
      tenantId: subject.tenantId,
      actor: subjectActor(subject),
      action: 'auth.token.exchange',
      outcome: 'denied',
      target: form.resource,
    });
    throw new OAuthError('invalid_target', 'the subject may not act in that tenant');
  }
  // Platform permissions do not travel into another tenant: a delegated token cannot hop further.
  const permissions = sameTenant
    ? subject.permissions
    : subject.permissions.filter((p) => !isPlatformPermission(p));
  // Never longer than the subject token: its revocation entry must outlast the delegated token.
  const ttl = Math.min(ctx.config.exchangeTokenTtl, subject.exp - Math.floor(Date.now() / 1000));
  if (ttl < 1) throw new OAuthError('invalid_grant', 'the subject token is about to expire');
  const { token } = await ctx.auth.tokens.issue(
    {
      sub: subject.sub,
      aud: audience,
      tenantId: target,
      permissions,
      client_id: subject.client_id,
      kind: subject.kind,
      act: { sub: subject.sub, tenantId: subject.tenantId, jti: subject.jti },
    },
    ttl,
  );
  for (const tenantId of new Set([subject.tenantId, target])) {
    ctx.audit.record({
      tenantId,
      actor: subjectActor(subject),
      action: 'auth.token.exchange',
      outcome: 'success',
      target: form.resource,
      details: { fromTenant: subject.tenantId, toTenant: target },
    });
  }
  return {
    access_token: token,
    token_type: 'Bearer',
    expires_in: ttl,
    issued_token_type: 'urn:ietf:params:oauth:token-type:access_token',
  };
}

/** A grant of the token endpoint: who it spends the budgets of, and the grant itself. */
export interface Grant {
  /** True when the grant authenticates a client (and so reads HTTP Basic credentials). */
  authenticatesClient?: boolean;
  /** The canonical identity being authenticated (client or user at an address, token family, token subject). */
  rateKey(
    ctx: AppContext,
    form: Record<string, string>,
    address: string,
    client?: ClientAuth | null,
  ): Promise<string>;
  run(
    ctx: AppContext,
    form: Record<string, string>,
    address: string,
    client?: ClientAuth | null,
  ): Promise<TokenResponse>;
}

/** The grants by grant_type: a Map, so no request value can reach Object.prototype ("constructor", "toString"). */
export const GRANTS: ReadonlyMap<string, Grant> = new Map<string, Grant>([
  [
    'client_credentials',
    {
      authenticatesClient: true,
      // The budget of the client named at this address, whichever way it authenticates.
      rateKey: (ctx, form, address, client) =>
        clientRateKey(ctx, client?.clientId ?? form.client_id, address),
      run: (ctx, form, address, client) =>
        clientCredentialsGrant(ctx, form, address, client ?? undefined),
    },
  ],
  [
    'password',
    {
      // Per address too: a guesser elsewhere must not spend the owner's budget (see passwords.ts).
      rateKey: async (_ctx, form, address) =>
        rateKey(
          'user',
          canonicalId(form.tenant_id ?? ''),
          (form.username ?? '').toLowerCase(),
          address,
        ),
      run: passwordGrant,
    },
  ],
  [
    'refresh_token',
    {
      rateKey: (ctx, form, address) => refreshRateKey(ctx, form.refresh_token, address),
      run: (ctx, form) => refreshTokenGrant(ctx, form),
    },
  ],
  [
    'urn:ietf:params:oauth:grant-type:token-exchange',
    {
      rateKey: async (ctx, form, address) => {
        const subject = form.subject_token
          ? await ctx.auth.tokens.verifyFresh(form.subject_token)
          : null;
        return subject
          ? rateKey('subject', subject.tenantId, subject.sub)
          : rateKey('address', address);
      },
      run: (ctx, form) => tokenExchangeGrant(ctx, form),
    },
  ],
]);
