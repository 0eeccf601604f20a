/**
 * RFC 7662 introspection. The caller authenticates either with its own bearer token (what the
 * endpoint always took) or, as a resource server does (RFC 7662 2.1), with a workload's client
 * credentials: client_secret_basic or client_secret_post (RFC 6749 2.3.1), one method per request.
 *
 * What each caller may see (anything else is the inactive answer of 2.2, so it learns nothing):
 * - bearer: its own token; any token with admin.platform.introspect.
 * - client: a workload holding auth.introspect.self sees the tokens issued to it (the client form
 *   of "its own token": the same client_id); one holding admin.platform.introspect (only the
 *   platform tenant's roles can) sees any token. A workload holding neither is refused with 403
 *   unauthorized_client: its credentials were right, it is not an introspector.
 * Failed client authentication spends the token endpoint's failure budget of the same key
 * (clientRateKey) and answers 401 invalid_client with a challenge for the scheme used.
 */
import type { AppContext } from '../../context.ts';
import { OAuthError } from '../../../shared/errors/index.ts';
import { bearerToken, type AccessClaims } from './access-tokens.ts';
import type { WorkloadCredentials } from './client-secrets.ts';
import {
  BASIC_CHALLENGE,
  authenticateWorkload,
  basicFailure,
  clientAuthOf,
  clientRateKey,
  type ClientAuth,
} from './client-auth.ts';
import { withAuthBudget } from './rate-limits.ts';
import { clientActor } from '../../../shared/audit/actor.ts';

/** The client authentication methods introspection accepts, as RFC 8414 metadata names them. */
export const INTROSPECTION_AUTH_METHODS = [
  'client_secret_basic',
  'client_secret_post',
  'bearer',
] as const;

/** An introspection request as the endpoint received it. */
export interface IntrospectionRequest {
  form: Record<string, string>;
  /** The Authorization header: Bearer (the caller's token) or Basic (client_secret_basic). */
  authorization: string | undefined;
  /** The client address: the key of the failure budget when the client id names no workload. */
  address: string;
}

const AUDIT_ACTION = 'auth.token.introspect';
const PLATFORM = 'admin.platform.introspect';
const SELF = 'auth.introspect.self';

/** 401 when the caller sent no credentials at all: a challenge for every scheme accepted (RFC 9110 11.6.1). */
const noCredentials = () =>
  new OAuthError(
    'invalid_client',
    'introspection requires client authentication (client_secret_basic or client_secret_post) or the caller’s bearer token',
    401,
    { 'WWW-Authenticate': `Bearer realm="keyward", ${BASIC_CHALLENGE}` },
  );

/** The bearer form: the caller's own token must be fresh; it sees that token, or any with the platform permission. */
async function bearerCaller(ctx: AppContext, req: IntrospectionRequest, token: string) {
  if (req.form.client_id !== undefined || req.form.client_secret !== undefined)
    throw new OAuthError(
      'invalid_request',
      'the caller authenticated both with a bearer token and with client credentials; use one method (RFC 6749 2.3)',
    );
  const caller = await ctx.auth.tokens.verifyFresh(token);
  if (!caller)
    throw new OAuthError('invalid_client', 'the bearer token is not valid', 401, {
      'WWW-Authenticate': 'Bearer realm="keyward", error="invalid_token"',
    });
  return (claims: AccessClaims) =>
    claims.jti === caller.jti || caller.permissions.includes(PLATFORM);
}

/**
 * The client form: the workload authenticates inside the token endpoint's budget. A wrong secret
 * in the body is 401 invalid_client here (RFC 7662 2.1 defers to RFC 6749 5.2's client
 * authentication failure), not the token endpoint's invalid_grant.
 */
async function clientCaller(ctx: AppContext, req: IntrospectionRequest, client: ClientAuth) {
  if (client.method === 'client_secret_post' && (!client.clientId || !client.clientSecret))
    throw new OAuthError('invalid_request', 'client_id and client_secret are both required');
  if (client.clientId === '') throw basicFailure('the Basic credentials name no client');
  const key = await clientRateKey(ctx, client.clientId, req.address);
  const creds: WorkloadCredentials = await withAuthBudget(ctx.auth.limits, key, () =>
    authenticateWorkload(
      ctx,
      client.clientId,
      client.clientSecret,
      req.address,
      client.method,
      AUDIT_ACTION,
    ).catch((err: unknown) => {
      if (err instanceof OAuthError && err.error === 'invalid_grant')
        throw basicFailure('client authentication failed');
      throw err;
    }),
  );
  const platform = creds.permissions.includes(PLATFORM);
  if (!platform && !creds.permissions.includes(SELF)) {
    ctx.audit.record({
      tenantId: creds.tenantId,
      actor: clientActor(creds.clientId),
      action: AUDIT_ACTION,
      outcome: 'failure',
      details: { reason: 'not-an-introspector' },
    });
    throw new OAuthError(
      'unauthorized_client',
      `the client holds neither ${SELF} nor ${PLATFORM}`,
      403,
    );
  }
  // Resource servers introspect at the rate they are called: tallied, as client_credentials is.
  ctx.audit.tally({
    tenantId: creds.tenantId,
    actor: clientActor(creds.clientId),
    action: AUDIT_ACTION,
    outcome: 'success',
  });
  return (claims: AccessClaims) => platform || claims.client_id === creds.clientId;
}

/** RFC 7662 2.2: what the token is, or `{active: false}` when it is not active or not the caller's to see. */
export async function introspect(
  ctx: AppContext,
  req: IntrospectionRequest,
): Promise<Record<string, unknown>> {
  if (!req.form.token) throw new OAuthError('invalid_request', 'token is required');
  let maySee: (claims: AccessClaims) => boolean;
  const bearer = bearerToken(req.authorization);
  if (bearer !== null) maySee = await bearerCaller(ctx, req, bearer);
  else {
    const client = clientAuthOf(req.authorization, req.form);
    if (!client) throw noCredentials();
    maySee = await clientCaller(ctx, req, client);
  }
  const claims = await ctx.auth.tokens.verifyFresh(req.form.token);
  // Verification allows 30 s of clock skew for tokens a resource server checks with its own
  // clock; here the clock is the issuer's own, so a token is active only before its exp
  // (RFC 7519 4.1.4), and the answer never shows an exp in the past beside active: true.
  if (!claims || claims.exp <= Date.now() / 1000 || !maySee(claims)) return { active: false };
  return {
    active: true,
    sub: claims.sub,
    exp: claims.exp,
    iat: claims.iat,
    scope: claims.permissions.join(' '),
    client_id: claims.client_id,
    aud: claims.aud,
    iss: claims.iss,
    jti: claims.jti,
    token_type: 'Bearer',
    tenantId: claims.tenantId,
    ...(claims.act ? { act: claims.act } : {}),
  };
}
