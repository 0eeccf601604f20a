/**
 * The route table: every router of the app, with the URL it is mounted at and the token
 * audiences checked in front of it, in one list (node-oidc-provider's initialize_app.js style).
 * A router's file path mirrors its URL (`v3/crypto/keys.ts` serves /api/v3/crypto/keys,
 * `legacy/...` the unversioned paths), and its own paths are relative to its mount.
 * createApp walks this table; nothing else mounts a router.
 */
import type { Router } from 'express';
import {
  addRuntimeRoutes,
  type LegacyRuntimeRoute,
  type OAuthRoute,
  type RuntimeRoute,
} from '../http/runtime-route.ts';
import { Router as expressRouter } from 'express';
import { endpointRouter, type Endpoint } from '../http/endpoint.ts';
import { openApiDocument } from '../openapi/index.ts';
import type { HandDocumented } from '../openapi/endpoints.ts';
import type { AppContext } from '../context.ts';
import { AUDIENCE_ADMIN, AUDIENCE_CORE, AUDIENCE_LEGACY } from '../services/auth/access-tokens.ts';
import { HEALTH_ENDPOINTS } from './health.ts';
import { AWS_KMS_DOCUMENTED, createAwsKmsRouter } from './aws-kms.ts';
import { METRICS_ENDPOINTS } from './metrics.ts';
import { docsEndpoints } from './docs.ts';
import { CONSOLE_ENDPOINTS } from './console.ts';
import { PROBLEM_ENDPOINTS } from './problems.ts';
import { WELL_KNOWN_ENDPOINTS } from './well-known.ts';
import {
  AUTH_ENDPOINTS,
  AUTH_LANE,
  createAuthFallbackRouter,
  createAuthHeadersRouter,
} from './v3/auth.ts';
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
  /** The mount's route rows (api/http/endpoint.ts): served, validated and documented from one declaration. */
  endpoints?: readonly Endpoint[];
  /**
   * Runtime operations (POST {kid, ...} or {items}): served by Express through the per-route
   * core (api/http/runtime-route.ts) and documented from their contract.
   */
  runtime?: readonly (RuntimeRoute | LegacyRuntimeRoute)[];
  /** A router written by hand, for what rows do not describe yet. */
  router?: (ctx: AppContext) => Router;
  /** The hand router's operations, documented in its route file (a protocol rows do not speak). */
  documented?: readonly HandDocumented[];
  /** The path's :tenantId must be a UUID and the token's tenant (or the caller has cross-tenant power). */
  tenantScoped?: boolean;
  /**
   * The runtime routes of this router that the node:http runtime lane (api/runtime-lane.ts)
   * also serves, ahead of Express, with the same per-route core (api/http/runtime-route.ts).
   */
  lane?: readonly (RuntimeRoute | OAuthRoute)[];
}

/** A URL prefix, who may call it, and its routers. */
export interface Area {
  prefix: string;
  /**
   * Token audiences checked once for every path under the prefix, unknown paths
   * included; null for public areas (and those that answer in the OAuth shape themselves).
   */
  audiences: readonly string[] | null;
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
      // POST / with X-Amz-Target, ahead of the landing page's 405 for POST /;
      // the runtime lane serves it first.
      { path: '', router: createAwsKmsRouter, documented: AWS_KMS_DOCUMENTED },
      // The document's rows read the document of this table: built when first asked for.
      { path: '', endpoints: docsEndpoints((baseUrl) => apiDocument(baseUrl)) },
      { path: '', endpoints: CONSOLE_ENDPOINTS },
    ],
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
    mounts: [
      // Cache-Control: no-store on every answer of the area, ahead of its rows.
      { path: '', router: createAuthHeadersRouter },
      // After the rows, an unknown path is a 404 in the OAuth shape.
      {
        path: '',
        endpoints: AUTH_ENDPOINTS,
        lane: AUTH_LANE,
        router: createAuthFallbackRouter,
      },
    ],
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
      { path: '', runtime: CRYPTO_OPERATIONS, lane: CRYPTO_OPERATIONS },
      { path: '/keys', endpoints: CRYPTO_KEY_ENDPOINTS },
      { path: '/stream', endpoints: CRYPTO_STREAM_ENDPOINTS },
    ],
  },
  {
    prefix: '/api/v3/pqc',
    audiences: [AUDIENCE_CORE],
    mounts: [{ path: '', endpoints: PQC_KEY_ENDPOINTS, runtime: PQC_RUNTIME }],
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
    // The legacy login answers as the Auth API does: never cached, an unknown path a 404 in the OAuth shape.
    mounts: [
      { path: '', router: createAuthHeadersRouter },
      { path: '', endpoints: LEGACY_AUTH_ENDPOINTS, router: createAuthFallbackRouter },
    ],
  },
  {
    prefix: '/api/key-management',
    audiences: [AUDIENCE_LEGACY],
    mounts: [{ path: '', endpoints: LEGACY_KEY_ENDPOINTS }],
  },
  {
    prefix: '/api/crypto',
    audiences: [AUDIENCE_LEGACY],
    mounts: [{ path: '', runtime: LEGACY_OPERATIONS }],
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
 * needing a token only behind one (else it would be served to anyone, or answer 500), and a
 * row whose path names `:tenantId` only in a tenant-scoped mount.
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
      }
}

/** The routers of a mount: its rows', its runtime operations' and its hand-written one, in that order. */
export const mountRouters = (ctx: AppContext, mount: Mount): Router[] => [
  ...(mount.endpoints ? [endpointRouter(ctx, mount.endpoints)] : []),
  ...(mount.runtime ? [addRuntimeRoutes(ctx, expressRouter(), mount.runtime)] : []),
  ...(mount.router ? [mount.router(ctx)] : []),
];

/** The OpenAPI document of this table for a deployment's public base URL. */
export const apiDocument = (baseUrl: string): Record<string, unknown> =>
  openApiDocument(baseUrl, ROUTE_TABLE);

/** The full mount path of a router: its area's prefix and its own path ('/' for the root). */
export const mountPath = (area: Area, mount: Mount): string => `${area.prefix}${mount.path}` || '/';

/**
 * A route the runtime lane serves, by its full path: a runtime operation behind its area's
 * bearer check, or a public OAuth form endpoint.
 */
export type LaneRoute =
  | { kind: 'runtime'; path: string; audiences: readonly string[]; route: RuntimeRoute }
  | { kind: 'oauth'; path: string; route: OAuthRoute };

/** Every route of the table that the runtime lane serves. */
export function laneRoutes(): LaneRoute[] {
  return ROUTE_TABLE.flatMap((area) =>
    area.mounts.flatMap((mount) =>
      (mount.lane ?? []).map((route): LaneRoute => {
        const path = `${area.prefix}${mount.path}${route.path}`;
        if ('serve' in route) {
          // An OAuth endpoint authenticates its client itself; behind a bearer check it could not.
          if (area.audiences) throw new Error(`OAuth lane route ${path} is behind a bearer check`);
          return { kind: 'oauth', path, route };
        }
        // A lane route checks the bearer itself; a public area would have none to check.
        if (!area.audiences) throw new Error(`lane route ${path} is in a public area`);
        return { kind: 'runtime', path, audiences: area.audiences, route };
      }),
    ),
  );
}
