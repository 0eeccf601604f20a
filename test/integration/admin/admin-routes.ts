/**
 * Every route of the Admin API, as a table: the isolation matrix drives each one with another
 * tenant's token, and the OpenAPI test checks that the table, the Express router stack and the
 * document agree. Path parameters use the Express names in OpenAPI braces.
 */
export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface AdminRoute {
  method: Method;
  path: string;
  /** A body that would succeed for the owner, so a refusal proves the guard, not bad input. */
  body?: unknown;
}

const P = '/api/v3/admin/platform';
const T = '/api/v3/admin/tenants/{tenantId}';

export const ADMIN_ROUTES: readonly AdminRoute[] = [
  { method: 'GET', path: `${P}/tenants` },
  { method: 'POST', path: `${P}/tenants`, body: { name: 'created-by-intruder' } },
  { method: 'GET', path: `${P}/tenants/{id}` },
  { method: 'POST', path: `${P}/tenants/{id}/suspend` },
  { method: 'POST', path: `${P}/tenants/{id}/resume` },
  { method: 'GET', path: `${P}/scopes` },
  { method: 'POST', path: `${P}/tokens/revoke`, body: { jti: 'some-jti' } },
  { method: 'GET', path: `${P}/tokens/revoked` },
  { method: 'POST', path: `${P}/signing-keys/rotate` },
  { method: 'GET', path: `${P}/master-key` },
  { method: 'POST', path: `${P}/master-key/rewrap` },
  { method: 'GET', path: `${P}/backup` },

  { method: 'GET', path: T },

  { method: 'GET', path: `${T}/workloads` },
  { method: 'POST', path: `${T}/workloads`, body: { name: 'intruder-app', roleId: '{roleId}' } },
  { method: 'GET', path: `${T}/workloads/{id}` },
  { method: 'DELETE', path: `${T}/workloads/{id}` },
  { method: 'POST', path: `${T}/workloads/{id}/disable` },
  { method: 'POST', path: `${T}/workloads/{id}/enable` },
  { method: 'POST', path: `${T}/workloads/{id}/secret`, body: { graceSeconds: 0 } },
  { method: 'GET', path: `${T}/workloads/{id}/access-keys` },
  { method: 'POST', path: `${T}/workloads/{id}/access-keys`, body: {} },
  { method: 'DELETE', path: `${T}/workloads/{id}/access-keys/{accessKeyId}` },

  { method: 'GET', path: `${T}/roles` },
  {
    method: 'POST',
    path: `${T}/roles`,
    body: { name: 'intruder-role', permissions: ['admin.keys.read'] },
  },
  { method: 'GET', path: `${T}/roles/{id}` },
  { method: 'PATCH', path: `${T}/roles/{id}`, body: { permissions: ['admin.keys.read'] } },
  { method: 'DELETE', path: `${T}/roles/{id}` },

  { method: 'GET', path: `${T}/users` },
  {
    method: 'POST',
    path: `${T}/users`,
    body: { email: 'intruder@evil.test', password: 'a long enough password', roleId: '{roleId}' },
  },
  { method: 'GET', path: `${T}/users/{id}` },
  { method: 'PATCH', path: `${T}/users/{id}`, body: { disabled: true } },
  { method: 'DELETE', path: `${T}/users/{id}` },
  { method: 'POST', path: `${T}/users/{id}/password-reset` },

  { method: 'GET', path: `${T}/audit/events` },
  { method: 'POST', path: `${T}/audit/verify`, body: {} },
  { method: 'GET', path: `${T}/audit/head` },

  { method: 'GET', path: `${T}/policies/templates` },
  { method: 'GET', path: `${T}/policies/effective` },
  { method: 'PUT', path: `${T}/policies/overrides`, body: { template: 'pqc-only' } },

  { method: 'GET', path: `${T}/keys` },
  { method: 'POST', path: `${T}/keys`, body: { type: 'aes-256', kid: 'planted' } },
  { method: 'POST', path: `${T}/keys/import-keystore` },
  {
    method: 'POST',
    path: `${T}/keys/orchestrate`,
    body: { operation: 'revoke', selector: { all: true } },
  },
  { method: 'GET', path: `${T}/keys/orchestrate/{operationId}` },
  { method: 'GET', path: `${T}/keys/{kid}` },
  { method: 'PATCH', path: `${T}/keys/{kid}`, body: { description: 'planted' } },
  { method: 'GET', path: `${T}/keys/{kid}/public` },
  { method: 'POST', path: `${T}/keys/{kid}/rotate` },
  { method: 'POST', path: `${T}/keys/{kid}/suspend` },
  { method: 'POST', path: `${T}/keys/{kid}/resume` },
  { method: 'POST', path: `${T}/keys/{kid}/revoke` },
  { method: 'POST', path: `${T}/keys/{kid}/archive` },

  { method: 'GET', path: `${T}/cryptographic-exchanges` },
  {
    method: 'POST',
    path: `${T}/cryptographic-exchanges`,
    body: { kid: '{kid}', toTenantId: '{otherTenantId}', mode: 'public' },
  },
  { method: 'GET', path: `${T}/cryptographic-exchanges/{id}` },
  { method: 'POST', path: `${T}/cryptographic-exchanges/{id}/accept`, body: {} },
  { method: 'POST', path: `${T}/cryptographic-exchanges/{id}/reject`, body: {} },
  { method: 'POST', path: `${T}/cryptographic-exchanges/{id}/cancel`, body: {} },
];

/** Routes outside /api/v3/admin that the admin and auth areas also register. */
export const OTHER_ROUTES: ReadonlyArray<{ method: Method; path: string }> = [
  { method: 'POST', path: '/api/v3/auth/token' },
  { method: 'POST', path: '/api/v3/auth/token/revoke' },
  { method: 'POST', path: '/api/v3/auth/token/introspect' },
  { method: 'POST', path: '/api/v3/auth/password/forgot' },
  { method: 'POST', path: '/api/v3/auth/password/reset' },
  { method: 'POST', path: '/api/authenticate/app' },
  { method: 'POST', path: '/api/authenticate/refresh' },
  { method: 'GET', path: '/.well-known/jwks.json' },
  { method: 'GET', path: '/.well-known/oauth-authorization-server' },
  { method: 'POST', path: '/api/migration/pkcs12' },
];

/** The tenant-scoped area whose record an `{id}` names, from the path. */
export function idArea(path: string): 'tenant' | 'workload' | 'role' | 'user' | 'exchange' | null {
  if (!path.includes('{id}')) return null;
  if (path.includes('/platform/tenants/')) return 'tenant';
  if (path.includes('/workloads/')) return 'workload';
  if (path.includes('/roles/')) return 'role';
  if (path.includes('/users/')) return 'user';
  return 'exchange';
}
