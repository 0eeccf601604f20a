/**
 * The one format of an audit event's actor (and of a revocation's `revokedBy`): `kind:id` for a
 * subject, with the tenant a delegated token acts from, and a few fixed names for the service's
 * own acts. Every writer of an event takes its actor from here, never from a template of its own.
 */

/** The subject of a token: `user:<id>` or `workload:<id>`, delegation named. */
export interface ActingSubject {
  kind: string;
  sub: string;
  act?: { tenantId: string };
}

/** The actor of a token's subject (a delegated token names the tenant it acts from). */
export const subjectActor = (s: ActingSubject): string =>
  s.act ? `${s.kind}:${s.sub} (acting from ${s.act.tenantId})` : `${s.kind}:${s.sub}`;

/** A human user, by id (or, for a failed login, the name given). */
export const userActor = (id: string): string => `user:${id}`;

/** An OAuth client authenticating itself at the token, introspection or legacy login endpoints. */
export const clientActor = (clientId: string): string => `client:${clientId}`;

/** A client that named no known client id. */
export const UNKNOWN_CLIENT_ACTOR = clientActor('unknown');

/** A request that presented no valid token. */
export const ANONYMOUS_ACTOR = 'anonymous';

/** A refresh token presented without client authentication (its subject is not yet known). */
export const REFRESH_TOKEN_ACTOR = 'refresh-token';

/** The service acting on its own schedule (rotation, expiry, bootstrap). */
export const SYSTEM_ACTOR = 'system';

/** The audit log reporting on itself (events it had to drop). */
export const AUDIT_LOG_ACTOR = 'keyward';
