/**
 * The signed-in session. Tokens live in this module's variables only: never in localStorage,
 * sessionStorage, a cookie, the URL or the log, so a reload signs the person out.
 *
 * - sign-in: the password grant (RFC 6749 section 4.3) at /api/v3/auth/token;
 * - refresh: the refresh_token grant a minute before the access token expires;
 * - tenant switch (platform administrators): RFC 8693 token exchange for an admin token of the
 *   chosen tenant, exchanged again when it nears its end;
 * - sign-out: RFC 7009 revocation of the refresh token (its family's access tokens die with it)
 *   and of the access tokens.
 */

const TOKEN = '/api/v3/auth/token';
const REVOKE = '/api/v3/auth/token/revoke';
const EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';

/** A failed token request, in the problem's terms (title and detail) for the page to show. */
export class AuthError extends Error {
  /**
   * @param {string} title
   * @param {string} detail
   */
  constructor(title, detail) {
    super(`${title}: ${detail}`);
    this.title = title;
    this.detail = detail;
  }
}

/**
 * @typedef {{ token: string, exp: number, tenantId: string, sub: string, permissions: string[] }} Access
 */

/** Counts sign-ins and sign-outs, so an answer that arrives after one is dropped. */
let generation = 0;
/** @type {Access | null} */
let home = null;
/** @type {string | null} */
let refreshToken = null;
/** @type {Access | null} the exchanged token of the tenant switched to, if any */
let delegated = null;
/**
 * Every exchanged token still alive. Revoking the refresh token ends the access tokens of its
 * family, but an exchanged token made from an earlier access token lives on until its own end,
 * so sign-out revokes each of them.
 * @type {Access[]}
 */
let exchanged = [];
/** @type {{ id: string, name: string } | null} */
let tenant = null;
/** @type {ReturnType<typeof setTimeout> | undefined} */
let refreshTimer;
/** @type {(reason: string) => void} */
let onEnd = () => {};

/**
 * The claims of a JWT access token (read for display and timing only: the API checks it).
 * @param {string} jwt
 * @returns {Access}
 */
function accessOf(jwt) {
  const part = jwt.split('.')[1] ?? '';
  const claims = JSON.parse(atob(part.replace(/-/g, '+').replace(/_/g, '/')));
  return {
    token: jwt,
    exp: Number(claims.exp),
    tenantId: String(claims.tenantId ?? ''),
    sub: String(claims.sub ?? ''),
    permissions: Array.isArray(claims.permissions) ? claims.permissions.map(String) : [],
  };
}

/**
 * POSTs a form to the token endpoint; an OAuth error answer becomes an AuthError.
 * @param {Record<string, string>} form
 */
async function tokenRequest(form) {
  let res;
  try {
    res = await fetch(TOKEN, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: new URLSearchParams(form),
      credentials: 'omit',
      cache: 'no-store',
    });
  } catch {
    throw new AuthError('The service did not answer', 'check the connection and try again');
  }
  const body = await res.json().catch(() => ({}));
  if (!res.ok)
    throw new AuthError(
      body.error === 'invalid_grant'
        ? 'Sign-in refused'
        : String(body.error ?? `HTTP ${res.status}`),
      String(body.error_description ?? res.statusText),
    );
  return body;
}

/**
 * Plans the refresh a minute before the access token's end (at least 5 s from now).
 * @param {number} expiresIn seconds
 */
function planRefresh(expiresIn) {
  clearTimeout(refreshTimer);
  const ms = Math.max(5, expiresIn - 60) * 1000;
  refreshTimer = setTimeout(() => {
    const session = generation;
    refresh().catch(() => {
      // A sign-out meanwhile already ended this session: nothing to say.
      if (session === generation) end('Your session ended; sign in again.');
    });
  }, ms);
}

/** The e-mail the person signed in with. */
let signedInEmail = '';

/**
 * Signs in with the password grant.
 * @param {string} email
 * @param {string} password
 * @param {string} tenantId
 */
export async function signIn(email, password, tenantId) {
  const body = await tokenRequest({
    grant_type: 'password',
    username: email,
    password,
    tenant_id: tenantId.trim().toLowerCase(),
  });
  generation += 1;
  home = accessOf(body.access_token);
  refreshToken = body.refresh_token ?? null;
  delegated = null;
  tenant = { id: home.tenantId, name: 'your tenant' };
  // Shown in the header and for the person's own audit events (the token names a user id only).
  signedInEmail = email.trim().toLowerCase();
  planRefresh(Number(body.expires_in));
}

/** @type {Promise<void> | null} the refresh under way: refresh tokens rotate, so never two at once */
let refreshing = null;

/** Renews the access token with the refresh token (which rotates; a reuse would end the family). */
export function refresh() {
  refreshing ??= renew().finally(() => {
    refreshing = null;
  });
  return refreshing;
}

async function renew() {
  if (!refreshToken) throw new AuthError('Not signed in', 'sign in again');
  const session = generation;
  const body = await tokenRequest({ grant_type: 'refresh_token', refresh_token: refreshToken });
  // Signed out (or in again) while the answer travelled: these tokens belong to no session.
  if (session !== generation) throw new AuthError('Signed out', 'the session ended');
  home = accessOf(body.access_token);
  refreshToken = body.refresh_token ?? refreshToken;
  // The exchanged token ends with the token it came from: get a new one from the new token.
  if (delegated) {
    const next = await exchange(delegated.tenantId);
    if (session !== generation) throw new AuthError('Signed out', 'the session ended');
    delegated = next;
  }
  planRefresh(Number(body.expires_in));
}

/**
 * An admin token for another tenant, by token exchange.
 * @param {string} tenantId
 */
async function exchange(tenantId) {
  if (!home) throw new AuthError('Not signed in', 'sign in again');
  const body = await tokenRequest({
    grant_type: EXCHANGE,
    subject_token: home.token,
    subject_token_type: ACCESS_TOKEN_TYPE,
    resource: `urn:keyward:tenant:${tenantId}:admin`,
  });
  const access = accessOf(body.access_token);
  exchanged = [...exchanged.filter((a) => a.exp > Date.now() / 1000), access];
  return access;
}

/**
 * Acts in another tenant from now on (platform administrators); the home tenant's id returns.
 * @param {{ id: string, name: string }} target
 */
export async function switchTenant(target) {
  if (!home) throw new AuthError('Not signed in', 'sign in again');
  delegated = target.id === home.tenantId ? null : await exchange(target.id);
  tenant = target;
}

/**
 * The bearer token for the current tenant (or the home tenant's with `homeToken`), renewed
 * first when it is within 30 s of its end.
 * @param {boolean} [homeToken]
 */
export async function bearer(homeToken = false) {
  if (!home) throw new AuthError('Not signed in', 'sign in again');
  const now = Date.now() / 1000;
  if (home.exp - now < 30) await refresh();
  if (!homeToken && delegated && delegated.exp - now < 30)
    delegated = await exchange(delegated.tenantId);
  return (!homeToken && delegated ? delegated : home)?.token ?? '';
}

/** Who is signed in and where they act, for the header and the pages. */
export function current() {
  return {
    signedIn: home !== null,
    homeTenantId: home?.tenantId ?? '',
    tenantId: tenant?.id ?? '',
    tenantName: tenant?.name ?? '',
    userId: home?.sub ?? '',
    /** the e-mail the person signed in with */
    email: home ? signedInEmail : '',
    isPlatform: home?.permissions.some((p) => p.startsWith('admin.platform.')) ?? false,
    /** the permissions of the token in use */
    permissions: [...((delegated ?? home)?.permissions ?? [])],
  };
}

/**
 * Names the tenant acted in, once its record is read.
 * @param {string} name
 */
export function nameTenant(name) {
  if (tenant) tenant = { ...tenant, name };
}

/**
 * Calls `listener` when the session ends by itself (a failed refresh).
 * @param {(reason: string) => void} listener
 */
export function onSessionEnd(listener) {
  onEnd = listener;
}

/** @param {string} reason */
function end(reason) {
  forget();
  onEnd(reason);
}

function forget() {
  generation += 1;
  clearTimeout(refreshTimer);
  home = null;
  delegated = null;
  exchanged = [];
  refreshToken = null;
  tenant = null;
}

/**
 * Signs out: revokes the refresh token and the access tokens, then forgets them. The tokens are
 * forgotten even when the service cannot be reached.
 */
export async function signOut() {
  const now = Date.now() / 1000;
  const tokens = [
    ['refresh_token', refreshToken],
    ['access_token', home?.token],
    ...exchanged.filter((a) => a.exp > now).map((a) => ['access_token', a.token]),
  ].filter(([, t]) => t);
  forget();
  await Promise.allSettled(
    tokens.map(([hint, token]) =>
      fetch(REVOKE, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ token: String(token), token_type_hint: String(hint) }),
        credentials: 'omit',
      }),
    ),
  );
}
