/** A tenant whose workload logs in to the Vault Transit API, for the Transit client tests. */
import { adminToken, makeTenant, type TestTenant } from '../../../support/auth.ts';
import type { TestApp } from '../../../support/app.ts';

/** Every permission the Transit paths map to (docs/vault-transit.md). */
export const TRANSIT_PERMISSIONS = [
  'crypto.encrypt',
  'crypto.decrypt',
  'crypto.sign',
  'crypto.verify',
  'crypto.generate-data-key',
  'crypto.keys.read',
  'admin.keys.create',
  'admin.keys.update',
  'admin.keys.rotate',
  'admin.keys.revoke',
  'admin.keys.archive',
];

export interface TransitTenant extends TestTenant {
  /** The platform administrator's token (Admin API), to act on the tenant's keys natively. */
  admin: string;
  /** The workload's token, as POST /v1/auth/approle/login answers it. */
  token: string;
}

/** One Vault answer: status and parsed body (null for 204). */
export interface VaultReply {
  status: number;
  body: any;
}

/** A request to the Vault API as Vault's Go client sends it (X-Vault-Token, X-Vault-Request). */
export async function vault(
  app: TestApp,
  method: string,
  path: string,
  token?: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<VaultReply> {
  const res = await fetch(`${app.url}/v1/${path}`, {
    method,
    headers: {
      ...(token ? { 'X-Vault-Token': token } : {}),
      'X-Vault-Request': 'true',
      ...headers,
    },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await res.text();
  return { status: res.status, body: text === '' ? null : JSON.parse(text) };
}

/** A tenant with the Transit permissions, logged in through AppRole with its workload credential. */
export async function transitTenant(
  app: TestApp,
  permissions = TRANSIT_PERMISSIONS,
): Promise<TransitTenant> {
  const t = await makeTenant(app, permissions);
  const admin = await adminToken(app);
  const login = await vault(app, 'POST', 'auth/approle/login', undefined, {
    role_id: t.clientId,
    secret_id: t.clientSecret,
  });
  if (login.status !== 200) throw new Error(`login: ${JSON.stringify(login.body)}`);
  return { ...t, admin, token: login.body.auth.client_token as string };
}
