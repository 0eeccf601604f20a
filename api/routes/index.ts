/**
 * The route table: every router of the app, with the URL it is mounted at and the token
 * audiences checked in front of it, in one list (node-oidc-provider's initialize_app.js style).
 * A router's file path mirrors its URL (`v3/crypto/keys.ts` serves /api/v3/crypto/keys,
 * `legacy/...` the unversioned paths), and its own paths are relative to its mount.
 * createApp walks this table; nothing else mounts a router.
 *
 * Tests: test/integration/http/route-areas.test.ts, test/integration/http/hostile-matrix.test.ts,
 *   test/integration/http/documented-answers.test.ts, test/integration/http/lane-parity.test.ts,
 *   test/integration/admin/openapi.test.ts, test/integration/cli/api-types.test.ts
 */
import type { Router } from 'express';
import { endpointRouter, type Endpoint } from '../rows/endpoint.ts';
import { openApiDocument } from '../openapi/index.ts';
import { protocolRouter, type ProtocolRow } from '../rows/protocol.ts';
import type { AppContext } from '../context.ts';
import { AUDIENCE_ADMIN, AUDIENCE_CORE, AUDIENCE_LEGACY } from '../services/auth/access-tokens.ts';
import { HEALTH_ENDPOINTS } from './health.ts';
import { AWS_KMS_ROWS } from './aws-kms.ts';
import { VAULT_TRANSIT_ROWS, serveTransit } from './vault-transit.ts';
import { METRICS_ENDPOINTS } from './metrics.ts';
import { docsEndpoints } from './docs.ts';
import { CONSOLE_ENDPOINTS } from './console.ts';
import { PROBLEM_ENDPOINTS } from './problems.ts';
import { WELL_KNOWN_ENDPOINTS } from './well-known.ts';
import { AUTH_ENDPOINTS } from './v3/auth.ts';
import { PLATFORM_TENANT_ENDPOINTS } from './v3/admin/platform/tenants.ts';
import { PLATFORM_ENDPOINTS } from './v3/admin/platform.ts';
import { WORKLOAD_ENDPOINTS } from './v3/admin/tenants/workloads.ts';
import { ROLE_ENDPOINTS } from './v3/admin/tenants/roles.ts';
import { USER_ENDPOINTS } from './v3/admin/tenants/users.ts';
import { POLICY_ENDPOINTS } from './v3/admin/tenants/policies.ts';
import { KEY_ENDPOINTS } from './v3/admin/tenants/keys.ts';
import { KEYSTORE_IMPORT_ENDPOINTS } from './v3/admin/tenants/keys/import-keystore.ts';
import { ORCHESTRATE_ENDPOINTS } from './v3/admin/tenants/keys/orchestrate.ts';
import { EXCHANGE_ENDPOINTS } from './v3/admin/tenants/cryptographic-exchanges.ts';
import { TENANT_SELF_ENDPOINTS } from './v3/admin/tenants.ts';
import { TENANT_AUDIT_ENDPOINTS } from './v3/admin/tenants/audit.ts';
import { CRYPTO_OPERATIONS } from './v3/crypto/operations.ts';
import { CRYPTO_KEY_ENDPOINTS } from './v3/crypto/keys.ts';
import { CRYPTO_STREAM_ENDPOINTS } from './v3/crypto/stream.ts';
import { PQC_KEY_ENDPOINTS, PQC_RUNTIME } from './v3/pqc.ts';
import { AUDIT_ENDPOINTS } from './v3/audit.ts';
import { MIGRATION_STREAM_ENDPOINTS } from './v3/migration/stream.ts';
import { UPLOAD_ENDPOINTS } from './v3/migration/uploads.ts';
import { JOB_ENDPOINTS } from './v3/migration/jobs.ts';
import { MIGRATION_ENDPOINTS } from './v3/migration/migrations.ts';
import { LEGACY_AUTH_ENDPOINTS } from './legacy/authenticate.ts';
import { LEGACY_KEY_ENDPOINTS } from './legacy/key-management.ts';
import { LEGACY_OPERATIONS } from './legacy/crypto.ts';
import { LEGACY_MIGRATION_ENDPOINTS, LEGACY_STREAM_ENDPOINTS } from './legacy/migration.ts';

/** One router at a path below its area's prefix. */
export interface Mount {
  /** Below the area's prefix; '' for the prefix itself. */
  path: string;
  /** The mount's route rows (api/rows/endpoint.ts): served, validated and documented from one declaration. */
  endpoints?: readonly Endpoint[];
  /** The mount's protocol rows (api/rows/protocol.ts): another wire protocol, answered whole by its core. */
  protocol?: readonly ProtocolRow[];
  /**
   * The protocol's core, when the runtime lane (and Express after the mount's rows) serves every
   * method and path below the mount with it (an unknown path's answer in the protocol's shape
   * too, a tenant's own Vault Transit mounts), not only its `lane` rows.
   */
  laneWhole?: ProtocolRow['serve'];
  /** The path's :tenantId must be a UUID and the token's tenant (or the caller has cross-tenant power). */
  tenantScoped?: boolean;
}

/** A URL prefix, who may call it, and its routers. */
export interface Area {
  prefix: string;
  /**
   * Token audiences checked once for every path under the prefix, unknown paths
   * included; null for public areas (and those that answer in the OAuth shape themselves).
   */
  audiences: readonly string[] | null;
  /**
   * `oauth`: every answer under the prefix takes the OAuth error shape `{error,
   * error_description}` (RFC 6749 5.2) and is never cached (RFC 6749 5.1): its rows' (which must
   * say `errors: 'oauth'`), an unknown path's 404 and a refused connection's 503 alike. Read by
   * createApp, the connection caps and the runtime lane ({@link answersInOAuthShape}).
   */
  errors?: 'oauth';
  mounts: readonly Mount[];
}

const TENANT = '/tenants/:tenantId';

/** Every area of the app, in mounting order. */
export const ROUTE_TABLE: readonly Area[] = [
  {
    prefix: '',
    audiences: null,
    mounts: [
      { path: '', endpoints: HEALTH_ENDPOINTS },
      // POST / with X-Amz-Target, ahead of the landing page's 405 for POST /.
      { path: '', protocol: AWS_KMS_ROWS },
      // The document's rows read the document of this table: built when first asked for.
      { path: '', endpoints: docsEndpoints((baseUrl) => apiDocument(baseUrl)) },
      { path: '', endpoints: CONSOLE_ENDPOINTS },
    ],
  },
  {
    // The Vault Transit API: its own token header and answers; the runtime lane serves it first.
    prefix: '/v1',
    audiences: null,
    mounts: [{ path: '', protocol: VAULT_TRANSIT_ROWS, laneWhole: serveTransit }],
  },
  {
    prefix: '/problems',
    audiences: null,
    mounts: [{ path: '', endpoints: PROBLEM_ENDPOINTS }],
  },
  {
    prefix: '/metrics',
    audiences: [AUDIENCE_CORE, AUDIENCE_ADMIN],
    mounts: [{ path: '', endpoints: METRICS_ENDPOINTS }],
  },
  {
    prefix: '/.well-known',
    audiences: null,
    mounts: [{ path: '', endpoints: WELL_KNOWN_ENDPOINTS }],
  },
  {
    prefix: '/api/v3/auth',
    audiences: null,
    errors: 'oauth',
    mounts: [{ path: '', endpoints: AUTH_ENDPOINTS }],
  },
  {
    prefix: '/api/v3/admin',
    audiences: [AUDIENCE_ADMIN],
    mounts: [
      { path: '/platform/tenants', endpoints: PLATFORM_TENANT_ENDPOINTS },
      { path: '/platform', endpoints: PLATFORM_ENDPOINTS },
      { path: `${TENANT}/workloads`, endpoints: WORKLOAD_ENDPOINTS, tenantScoped: true },
      { path: `${TENANT}/roles`, endpoints: ROLE_ENDPOINTS, tenantScoped: true },
      { path: `${TENANT}/users`, endpoints: USER_ENDPOINTS, tenantScoped: true },
      { path: `${TENANT}/policies`, endpoints: POLICY_ENDPOINTS, tenantScoped: true },
      // Ahead of the key rows, whose /:kid would answer their POSTs with 405.
      {
        path: `${TENANT}/keys/import-keystore`,
        endpoints: KEYSTORE_IMPORT_ENDPOINTS,
        tenantScoped: true,
      },
      {
        path: `${TENANT}/keys/orchestrate`,
        endpoints: ORCHESTRATE_ENDPOINTS,
        tenantScoped: true,
      },
      { path: `${TENANT}/keys`, endpoints: KEY_ENDPOINTS, tenantScoped: true },
      {
        path: `${TENANT}/cryptographic-exchanges`,
        endpoints: EXCHANGE_ENDPOINTS,
        tenantScoped: true,
      },
      { path: `${TENANT}/audit`, endpoints: TENANT_AUDIT_ENDPOINTS, tenantScoped: true },
      { path: TENANT, endpoints: TENANT_SELF_ENDPOINTS, tenantScoped: true },
    ],
  },
  {
    prefix: '/api/v3/crypto',
    audiences: [AUDIENCE_CORE],
    mounts: [
      { path: '', endpoints: CRYPTO_OPERATIONS },
      { path: '/keys', endpoints: CRYPTO_KEY_ENDPOINTS },
      { path: '/stream', endpoints: CRYPTO_STREAM_ENDPOINTS },
    ],
  },
  {
    prefix: '/api/v3/pqc',
    audiences: [AUDIENCE_CORE],
    mounts: [{ path: '', endpoints: [...PQC_KEY_ENDPOINTS, ...PQC_RUNTIME] }],
  },
  {
    prefix: '/api/v3/audit',
    audiences: [AUDIENCE_CORE],
    mounts: [{ path: '', endpoints: AUDIT_ENDPOINTS }],
  },
  {
    prefix: '/api/v3/migration',
    audiences: [AUDIENCE_ADMIN, AUDIENCE_CORE],
    mounts: [
      { path: '/stream', endpoints: MIGRATION_STREAM_ENDPOINTS },
      { path: '/uploads', endpoints: UPLOAD_ENDPOINTS },
      { path: '/jobs', endpoints: JOB_ENDPOINTS },
      { path: '/migrations', endpoints: MIGRATION_ENDPOINTS },
    ],
  },
  {
    prefix: '/api/authenticate',
    audiences: null,
    // The legacy login answers as the Auth API does.
    errors: 'oauth',
    mounts: [{ path: '', endpoints: LEGACY_AUTH_ENDPOINTS }],
  },
  {
    prefix: '/api/key-management',
    audiences: [AUDIENCE_LEGACY],
    mounts: [{ path: '', endpoints: LEGACY_KEY_ENDPOINTS }],
  },
  {
    prefix: '/api/crypto',
    audiences: [AUDIENCE_LEGACY],
    mounts: [{ path: '', endpoints: LEGACY_OPERATIONS }],
  },
  {
    prefix: '/api/migration',
    audiences: [AUDIENCE_ADMIN, AUDIENCE_CORE],
    mounts: [
      { path: '', endpoints: LEGACY_MIGRATION_ENDPOINTS },
      { path: '/stream', endpoints: LEGACY_STREAM_ENDPOINTS },
    ],
  },
];

/**
 * What the table's shape promises, checked when the app is built (a row in the wrong area fails
 * the start, never a request): an open row only where no bearer check covers the area, a row
 * needing a token only behind one (else it would be served to anyone, or answer 500), a
 * row whose path names `:tenantId` only in a tenant-scoped mount, and a row's error shape its area's.
 */
export function assertAreaAccess(areas: readonly Area[]): void {
  for (const area of areas)
    for (const mount of area.mounts)
      for (const row of mount.endpoints ?? []) {
        const where = `${row.method.toUpperCase()} ${mountPath(area, mount)}${row.path === '/' ? '' : row.path}`;
        const open = 'open' in row.access;
        if (open && area.audiences)
          throw new Error(`${where} is open, but its area ${area.prefix} checks a bearer token`);
        if (!open && !area.audiences)
          throw new Error(`${where} needs a token, but its area ${area.prefix || '/'} checks none`);
        if (`${mount.path}${row.path}`.includes(':tenantId') && !mount.tenantScoped)
          throw new Error(`${where} names :tenantId outside a tenant-scoped mount`);
        if ((row.errors === 'oauth') !== (area.errors === 'oauth'))
          throw new Error(`${where} answers errors in another shape than its area ${area.prefix}`);
      }
}

/** The routers of a mount: its rows' and its protocol rows' (and core, when it serves the mount whole). */
export const mountRouters = (ctx: AppContext, mount: Mount): Router[] => [
  ...(mount.endpoints ? [endpointRouter(ctx, mount.endpoints)] : []),
  ...(mount.protocol || mount.laneWhole
    ? [protocolRouter(ctx, mount.protocol ?? [], mount.laneWhole)]
    : []),
];

const OAUTH_PREFIXES = ROUTE_TABLE.filter((area) => area.errors === 'oauth').map((a) => a.prefix);

/** Whether a request URL is under an area that answers in the OAuth error shape. */
export function answersInOAuthShape(url: string): boolean {
  const path = url.split('?')[0];
  return OAUTH_PREFIXES.some((prefix) => path === prefix || path.startsWith(`${prefix}/`));
}

/** The OpenAPI document of this table for a deployment's public base URL. */
export const apiDocument = (baseUrl: string): Record<string, unknown> =>
  openApiDocument(baseUrl, ROUTE_TABLE);

/** The full mount path of a router: its area's prefix and its own path ('/' for the root). */
export const mountPath = (area: Area, mount: Mount): string => `${area.prefix}${mount.path}` || '/';

/**
 * A row the runtime lane serves, by its full path: a runtime operation behind its area's bearer
 * check, an open row of the OAuth shape that reads its own body (token issuance), or a protocol
 * row (the AWS KMS API), served at its path with any query string.
 */
export type LaneRoute =
  | { kind: 'runtime'; path: string; audiences: readonly string[]; row: Endpoint }
  | { kind: 'oauth'; path: string; row: Endpoint }
  | { kind: 'protocol'; path: string; row: ProtocolRow }
  | { kind: 'protocol-mount'; path: string; serve: ProtocolRow['serve'] };

/** Every protocol row of the table, by its full path. */
export function protocolRoutes(): { method: string; path: string; row: ProtocolRow }[] {
  return ROUTE_TABLE.flatMap((area) =>
    area.mounts.flatMap((mount) =>
      (mount.protocol ?? []).map((row) => ({
        method: row.method.toUpperCase(),
        path: fullPath(area, mount, row.path),
        row,
      })),
    ),
  );
}

/** A row's full path: the mount path, and the row's own below it ('/' is the mount itself). */
const fullPath = (area: Area, mount: Mount, path: string): string =>
  path === '/' ? mountPath(area, mount) : `${area.prefix}${mount.path}${path}`;

/** Every row of the table that the runtime lane serves (a row marked `lane`), checked for a kind the lane can serve. */
export function laneRoutes(): LaneRoute[] {
  const protocol = protocolRoutes()
    .filter(({ row }) => row.lane)
    .map(({ method, path, row }): LaneRoute => {
      if (method !== 'POST' || path.includes(':'))
        throw new Error(`lane row ${path} is not a POST at a fixed path`);
      return { kind: 'protocol', path, row };
    });
  return ROUTE_TABLE.flatMap((area) =>
    area.mounts.flatMap((mount) =>
      (mount.endpoints ?? [])
        .filter((row) => row.lane)
        .map((row): LaneRoute => {
          const path = fullPath(area, mount, row.path);
          if (row.method !== 'post' || path.includes(':'))
            throw new Error(`lane row ${path} is not a POST at a fixed path`);
          if (row.batch) {
            // The lane checks the bearer itself; a public area would have none to check.
            if (!area.audiences) throw new Error(`lane row ${path} is in a public area`);
            return { kind: 'runtime', path, audiences: area.audiences, row };
          }
          // An OAuth row authenticates its client itself; behind a bearer check it could not.
          if (area.audiences || area.errors !== 'oauth' || !('open' in row.access) || !row.request)
            throw new Error(`lane row ${path} is neither an operation nor an open OAuth row`);
          return { kind: 'oauth', path, row };
        }),
    ),
  )
    .concat(protocol)
    .concat(
      ROUTE_TABLE.flatMap((area) =>
        area.mounts
          .filter((mount) => mount.laneWhole)
          .map((mount): LaneRoute => {
            const path = mountPath(area, mount);
            if (path === '/') throw new Error('a mount the lane serves whole must have a path');
            return { kind: 'protocol-mount', path, serve: mount.laneWhole! };
          }),
      ),
    );
}
