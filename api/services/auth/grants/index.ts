/**
 * The grants of the token endpoint by grant_type, one file each exporting its parameters and its
 * run (node-oidc-provider's lib/actions/grants). Each returns the token response (RFC 6749
 * section 5.1) or throws an OAuthError with its RFC 6749 code; every attempt is audited.
 */
import type { Grant } from './grant.ts';
import { grant as clientCredentials } from './client-credentials.ts';
import { grant as password } from './password.ts';
import { grant as refreshToken } from './refresh-token.ts';
import { grant as tokenExchange } from './token-exchange.ts';

/** The grants by grant_type: a Map, so no request value can reach Object.prototype ("constructor", "toString"). */
export const GRANTS: ReadonlyMap<string, Grant> = new Map<string, Grant>([
  ['client_credentials', clientCredentials],
  ['password', password],
  ['refresh_token', refreshToken],
  ['urn:ietf:params:oauth:grant-type:token-exchange', tokenExchange],
]);
