/** Helpers that obtain real tokens through the real endpoints. */
import { request as httpRequest } from 'node:http';
import type { TestApp } from './app.ts';
import { ADMIN_EMAIL, ADMIN_PASSWORD } from './app.ts';
import { createTenant } from '../api/services/admin/tenants.ts';
import { createRole } from '../api/services/admin/roles.ts';
import { registerWorkload } from '../api/services/admin/workloads.ts';
import { createUser } from '../api/services/admin/users.ts';

/** POSTs a form to a path; returns status, headers and parsed JSON. */
export async function postForm(
  app: TestApp,
  path: string,
  form: Record<string, string>,
  headers: Record<string, string> = {},
) {
  const res = await fetch(`${app.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(form).toString(),
  });
  const text = await res.text();
  let body: Record<string, unknown> = {};
  try {
    body = JSON.parse(text);
  } catch {
    body = { raw: text };
  }
  return { status: res.status, headers: res.headers, body };
}

/**
 * POSTs a form from another client address (a loopback address other than 127.0.0.1, e.g.
 * 127.0.0.2): what per-address budgets and lockouts see as a second client. fetch cannot choose
 * its local address, so this goes through node:http.
 */
export function postFormFrom(
  app: TestApp,
  localAddress: string,
  path: string,
  form: Record<string, string>,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const body = new URLSearchParams(form).toString();
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      `${app.url}${path}`,
      {
        method: 'POST',
        localAddress,
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          'content-length': Buffer.byteLength(body),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            body: JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}'),
          }),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** Calls a JSON endpoint with an optional bearer token. */
export async function api(
  app: TestApp,
  method: string,
  path: string,
  token?: string,
  json?: unknown,
) {
  const res = await fetch(`${app.url}${path}`, {
    method,
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(json !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    body: json !== undefined ? JSON.stringify(json) : undefined,
  });
  const text = await res.text();
  let body: Record<string, unknown> & { items?: unknown[] } = {};
  try {
    body = JSON.parse(text);
  } catch {
    body = { raw: text };
  }
  return { status: res.status, headers: res.headers, body };
}

/** The platform administrator's HUMAN token. */
export async function adminToken(app: TestApp): Promise<string> {
  const r = await postForm(app, '/api/v3/auth/token', {
    grant_type: 'password',
    username: ADMIN_EMAIL,
    password: ADMIN_PASSWORD,
    tenant_id: app.platformTenantId,
  });
  if (r.status !== 200) throw new Error(`admin login failed: ${JSON.stringify(r.body)}`);
  return r.body.access_token as string;
}

export interface TestTenant {
  tenantId: string;
  roleId: string;
  clientId: string;
  clientSecret: string;
  userEmail: string;
  userPassword: string;
}

/** A tenant with a role holding `permissions`, one workload and one user of that role. */
export async function makeTenant(
  app: TestApp,
  permissions: string[],
  name = `t-${Math.random().toString(36).slice(2, 8)}`,
): Promise<TestTenant> {
  const tenant = await createTenant(app.ctx, { name });
  const role = await createRole(app.ctx, tenant.id, { name: 'runtime', permissions });
  const workload = await registerWorkload(app.ctx, tenant.id, { name: 'app', roleId: role.id });
  const userEmail = `user@${name}.test`;
  const userPassword = 'a long enough password';
  await createUser(app.ctx, tenant.id, {
    email: userEmail,
    password: userPassword,
    roleId: role.id,
  });
  return {
    tenantId: tenant.id,
    roleId: role.id,
    clientId: workload.clientId,
    clientSecret: workload.clientSecret,
    userEmail,
    userPassword,
  };
}

/** A client_credentials token for a tenant's workload. */
export async function workloadToken(
  app: TestApp,
  t: Pick<TestTenant, 'clientId' | 'clientSecret'>,
): Promise<string> {
  const r = await postForm(app, '/api/v3/auth/token', {
    grant_type: 'client_credentials',
    client_id: t.clientId,
    client_secret: t.clientSecret,
  });
  if (r.status !== 200) throw new Error(`workload login failed: ${JSON.stringify(r.body)}`);
  return r.body.access_token as string;
}

/** A password-grant token for a tenant's user. */
export async function userToken(app: TestApp, t: TestTenant): Promise<string> {
  const r = await postForm(app, '/api/v3/auth/token', {
    grant_type: 'password',
    username: t.userEmail,
    password: t.userPassword,
    tenant_id: t.tenantId,
  });
  if (r.status !== 200) throw new Error(`user login failed: ${JSON.stringify(r.body)}`);
  return r.body.access_token as string;
}
