/**
 * A Keyward API child process for benchmarks, with a provisioned tenant: bootstrap admin,
 * a tenant, a role holding the runtime permissions, a workload and keys, all through the API.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { cleanEnv, freePort, startChild, type Child } from './process.ts';

export interface KeywardInstance {
  url: string;
  child: Child;
  stop(): Promise<void>;
}

export interface Provisioned {
  tenantId: string;
  clientId: string;
  clientSecret: string;
  /** A service-core token of the workload. */
  token: string;
}

const root = new URL('../..', import.meta.url).pathname;
/**
 * Node options for the API process (BENCH_API_NODE_ARGS, space-separated), e.g.
 * `--cpu-prof --cpu-prof-dir=/tmp/prof` to profile it: NODE_OPTIONS refuses --cpu-prof.
 */
const API_NODE_ARGS = (process.env.BENCH_API_NODE_ARGS ?? '').split(' ').filter(Boolean);
const ADMIN = 'bench@keyward.local';

/**
 * Starts `node api/server.ts` on a free port with a temp DATA_DIR and bench-sized rate limits,
 * otherwise on `npm start`'s defaults: LOG_LEVEL info, an access line per
 * request on stdout, which the bench reads as a log collector would. A bench that measures
 * another setting passes it in `env` and says so.
 */
export async function startKeyward(
  env: Record<string, string> = {},
  /** The checkout whose api/server.ts runs (another worktree, to measure older code). */
  from: string = root,
): Promise<KeywardInstance & { adminPassword: string }> {
  const port = await freePort();
  const dataDir = mkdtempSync(join(tmpdir(), 'keyward-bench-'));
  const adminPassword = randomBytes(18).toString('base64url');
  const url = `http://127.0.0.1:${port}`;
  const child = await startChild(
    [...API_NODE_ARGS, join(from, 'api/server.ts')],
    cleanEnv({
      PORT: String(port),
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      PUBLIC_BASE_URL: url,
      KEYWARD_MASTER_KEY: randomBytes(32).toString('base64'),
      KEYWARD_BOOTSTRAP_ADMIN_EMAIL: ADMIN,
      KEYWARD_BOOTSTRAP_ADMIN_PASSWORD: adminPassword,
      // Benchmarks measure the service, not its abuse limits.
      RATE_LIMIT_TOKEN_PER_MINUTE: '100000000',
      RATE_LIMIT_API_PER_MINUTE: '100000000',
      ...env,
    }),
    `${url}/readyz`,
    60_000,
  );
  return {
    url,
    child,
    adminPassword,
    async stop() {
      await child.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

async function call(
  url: string,
  method: string,
  path: string,
  token: string | null,
  body?: unknown,
  form?: Record<string, string>,
): Promise<any> {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      'content-type': form ? 'application/x-www-form-urlencoded' : 'application/json',
    },
    body: form
      ? new URLSearchParams(form).toString()
      : body === undefined
        ? undefined
        : JSON.stringify(body),
  });
  const json = await res.json();
  if (res.status >= 300)
    throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

/** The platform administrator's token; the platform tenant id is printed once at bootstrap. */
/** The bootstrap administrator's platform tenant (from the server's first-start line) and token. */
export async function platformAdmin(
  k: KeywardInstance & { adminPassword: string },
): Promise<{ tenantId: string; token: string }> {
  const m = /platform tenant ([0-9a-f-]{36})/.exec(k.child.output());
  if (!m) throw new Error(`no bootstrap line in the server output:\n${k.child.output()}`);
  const r = await call(k.url, 'POST', '/api/v3/auth/token', null, undefined, {
    grant_type: 'password',
    username: ADMIN,
    password: k.adminPassword,
    tenant_id: m[1],
  });
  return { tenantId: m[1], token: r.access_token };
}

export async function adminToken(k: KeywardInstance & { adminPassword: string }): Promise<string> {
  return (await platformAdmin(k)).token;
}

/** A workload's client credentials. */
export interface WorkloadClient {
  clientId: string;
  clientSecret: string;
}

/** Creates a tenant with one role holding `permissions` and `count` workloads in that role. */
export async function provisionWorkloads(
  k: KeywardInstance & { adminPassword: string },
  permissions: string[],
  count: number,
): Promise<{ tenantId: string; admin: string; clients: WorkloadClient[] }> {
  // The platform admin holds admin.platform.cross-tenant, so it provisions the tenant directly.
  const admin = await adminToken(k);
  const tenant = await call(k.url, 'POST', '/api/v3/admin/platform/tenants', admin, {
    name: `bench-${randomBytes(3).toString('hex')}`,
  });
  const role = await call(k.url, 'POST', `/api/v3/admin/tenants/${tenant.id}/roles`, admin, {
    name: 'bench',
    permissions,
  });
  const clients: WorkloadClient[] = [];
  for (let i = 0; i < count; i += 1) {
    const workload = await call(
      k.url,
      'POST',
      `/api/v3/admin/tenants/${tenant.id}/workloads`,
      admin,
      { name: count === 1 ? 'bench' : `bench-${i}`, roleId: role.id },
    );
    clients.push({ clientId: workload.clientId, clientSecret: workload.clientSecret });
  }
  return { tenantId: tenant.id, admin, clients };
}

/** Creates a tenant with one workload holding `permissions` and the given keys; returns its token. */
export async function provision(
  k: KeywardInstance & { adminPassword: string },
  permissions: string[],
  keys: Array<{ kid: string; type: string; usage?: string }>,
): Promise<Provisioned> {
  const {
    tenantId,
    admin,
    clients: [client],
  } = await provisionWorkloads(k, permissions, 1);
  for (const key of keys)
    await call(k.url, 'POST', `/api/v3/admin/tenants/${tenantId}/keys`, admin, key);
  const tok = await call(k.url, 'POST', '/api/v3/auth/token', null, undefined, {
    grant_type: 'client_credentials',
    client_id: client.clientId,
    client_secret: client.clientSecret,
  });
  return { tenantId, ...client, token: tok.access_token };
}
