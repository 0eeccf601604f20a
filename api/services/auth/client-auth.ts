/**
 * Client authentication at the token and introspection endpoints (RFC 6749 section 2.3): HTTP
 * Basic or form fields, one method per request; the workload's secret checked at the same cost
 * whether or not the client exists; the budget key of a client at an address.
 */
import type { AppContext } from '../../context.ts';
import { OAuthError } from '../../../shared/errors/index.ts';
import { rateKey } from './rate-limits.ts';
import type { WorkloadCredentials } from './client-secrets.ts';
import { canonicalId, isUuid } from '../../../shared/ids.ts';
import { UNKNOWN_CLIENT_ACTOR, clientActor } from '../../../shared/audit/actor.ts';

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
