/**
 * The app's own route table, the input fields of each route and the callers of every API, for
 * the tests generated from the table (the hostile-input matrix, the documented answers).
 * Routes come from the Express router stack of createApp(ctx) plus the runtime lane; fields from
 * the OpenAPI document, which describes every route (else from ROUTE_FIELDS below, empty now). A
 * route with neither is reported as unenumerable, so coverage cannot shrink without a failing test.
 */
import type { Express } from 'express';
import {
  answersInOAuthShape,
  laneRoutes as tableLaneRoutes,
  protocolRoutes,
} from '../../../api/routes/index.ts';
import type { ProtocolRow } from '../../../api/rows/protocol.ts';
import type { TestApp } from '../../../support/app.ts';
import {
  adminToken,
  api,
  makeTenant,
  workloadToken,
  type TestTenant,
} from '../../../support/auth.ts';
import { PERMISSIONS, isPlatformPermission } from '../../../shared/permissions.ts';

/** The callers of every API over the route table: one tenant, its key, and a token per API. */
export interface ApiCallers {
  /** A tenant whose role holds every tenant permission, its workload and user. */
  tenant: TestTenant;
  admin: string;
  core: string;
  legacy: string;
  /** The token a path takes: the Core API the workload's, the legacy API its legacy token, else the platform admin's. */
  tokenFor(path: string): string;
}

// The Vault Transit API (/v1/) takes the same workload token as the Core API.
const CORE = /^\/(api\/v3\/(crypto|pqc|audit|migration)|v1)\//;
const LEGACY = /^\/api\/(key-management|crypto|migration)\//;

/**
 * A tenant holding every tenant permission with an AES-256 key `kid`, and the token of each API:
 * the platform admin's (admin API), the tenant workload's (Core) and its legacy token.
 */
export async function callersOfEveryApi(app: TestApp, kid: string): Promise<ApiCallers> {
  const tenant = await makeTenant(
    app,
    PERMISSIONS.filter((p) => !isPlatformPermission(p)),
  );
  const admin = await adminToken(app);
  const core = await workloadToken(app, tenant);
  const login = await api(app, 'POST', '/api/authenticate/app', undefined, {
    clientId: tenant.clientId,
    clientSecret: tenant.clientSecret,
  });
  const legacy = login.body.accessToken;
  if (typeof legacy !== 'string')
    throw new Error(`legacy login failed: ${JSON.stringify(login.body)}`);
  const key = await api(app, 'POST', `/api/v3/admin/tenants/${tenant.tenantId}/keys`, admin, {
    type: 'aes-256',
    kid,
  });
  if (key.status !== 201) throw new Error(`key ${kid} not created: ${JSON.stringify(key.body)}`);
  return {
    tenant,
    admin,
    core,
    legacy,
    tokenFor: (path) => (CORE.test(path) ? core : LEGACY.test(path) ? legacy : admin),
  };
}

export interface AppRoute {
  method: string;
  path: string;
}

/** Where a field travels. */
export type FieldIn = 'path' | 'query' | 'json' | 'form';

export interface Field {
  name: string;
  in: FieldIn;
  type?: string;
  format?: string;
  enum?: unknown[];
}

interface Layer {
  rawPath?: string | string[];
  route?: { path: string; methods: Record<string, boolean> };
  handle?: { stack?: Layer[] };
}

const join = (prefix: string, path: string) => (path === '/' ? prefix || '/' : `${prefix}${path}`);

/** Every method and path the Express app routes, found by walking its router stack (router 2: layer.rawPath). */
export function expressRoutes(app: Express): AppRoute[] {
  const out: AppRoute[] = [];
  const walk = (stack: Layer[], prefix: string) => {
    for (const layer of stack) {
      const paths = layer.rawPath === undefined ? ['/'] : ([] as string[]).concat(layer.rawPath);
      for (const p of paths) {
        if (layer.route) {
          for (const method of Object.keys(layer.route.methods))
            if (method !== '_all')
              out.push({ method: method.toUpperCase(), path: join(prefix, p) });
        } else if (layer.handle?.stack) {
          walk(layer.handle.stack, p === '/' ? prefix : `${prefix}${p}`);
        }
      }
    }
  };
  walk((app as unknown as { router: { stack: Layer[] } }).router.stack, '');
  const seen = new Set<string>();
  return out.filter((r) => !seen.has(`${r.method} ${r.path}`) && seen.add(`${r.method} ${r.path}`));
}

/** The runtime lane's routes (the route table's `lane` entries; api/runtime-lane.ts serves them ahead of Express). */
export const laneRoutes = (): AppRoute[] =>
  tableLaneRoutes()
    // A mount the lane serves whole is not a route of its own: its protocol rows are.
    .filter((r) => r.kind !== 'protocol-mount')
    .map((r) => ({ method: 'POST', path: r.path }));

/** Express path → OpenAPI path: ":kid" and "*name" → "{kid}", "{name}". */
export const openApiPath = (path: string) => path.replace(/[:*](\w+)/g, '{$1}');

/** The path parameters of an Express path. */
export const pathParams = (path: string) => [...path.matchAll(/[:*](\w+)/g)].map((m) => m[1]);

/**
 * Fields of routes the OpenAPI document does not describe, as `'METHOD /express/path': [fields]`.
 * Empty: the document describes every route (test/integration/admin/openapi.test.ts fails
 * otherwise). A route added without documentation must be documented (or, for a moment, listed
 * here) or the matrix fails as unenumerable; an entry for a route that is gone or now documented
 * fails it too.
 */
export const ROUTE_FIELDS: Record<string, Field[]> = {};

/**
 * The routes that answer in another protocol's error shape than problem+json, read from the
 * table's protocol rows, by `METHOD /path`: the AWS KMS API answers every error as awsJson1_1
 * `{"__type", "message"}`, because that is what AWS clients parse.
 */
export const PROTOCOL_SHAPED: ReadonlyMap<string, ProtocolRow> = new Map(
  protocolRoutes().map(({ method, path, row }) => [`${method} ${path}`, row]),
);

/**
 * The error body of each protocol: a protocol row added without an entry here fails the tests
 * that read it, so its error shape is checked from its first day.
 */
export const PROTOCOL_ERROR_BODY: Readonly<
  Record<string, (body: Record<string, unknown>) => boolean>
> = {
  'aws-kms': (body) => typeof body.__type === 'string' && typeof body.message === 'string',
  // Vault's `{"errors": [...]}`; a batch with a failed item answers 400 with its results.
  'vault-transit': (body) =>
    (Array.isArray(body.errors) && body.errors.every((e) => typeof e === 'string')) ||
    Array.isArray((body.data as { batch_results?: unknown } | undefined)?.batch_results),
};

/** Whether a path answers in the OAuth error shape (the table's OAuth areas). */
export const oauthShaped = (path: string): boolean => answersInOAuthShape(path);

/** Names tried on every route besides its own fields, in its query and body. */
export const GENERIC_FIELDS = ['id', 'tenantId', 'kid', 'name'];

type Schema = Record<string, unknown>;

/** Properties of a schema, through $ref, allOf, oneOf and anyOf. */
function properties(doc: Schema, schema: Schema | undefined, depth = 0): Array<[string, Schema]> {
  if (!schema || depth > 5) return [];
  const ref = schema.$ref as string | undefined;
  if (ref)
    return properties(
      doc,
      ref
        .split('/')
        .slice(1)
        .reduce<Schema | undefined>((o, k) => o?.[k] as Schema | undefined, doc),
      depth + 1,
    );
  const own = Object.entries((schema.properties as Record<string, Schema>) ?? {});
  const nested = ['allOf', 'oneOf', 'anyOf'].flatMap((k) =>
    ((schema[k] as Schema[]) ?? []).flatMap((s) => properties(doc, s, depth + 1)),
  );
  return [...own, ...nested];
}

/** The fields of one route from the OpenAPI document, or null when the document does not describe it. */
export function openApiFields(doc: Schema, route: AppRoute): Field[] | null {
  const op = ((doc.paths as Record<string, Record<string, Schema>>)[openApiPath(route.path)] ?? {})[
    route.method.toLowerCase()
  ];
  if (!op) return null;
  const fields: Field[] = [];
  for (const p of (op.parameters as Schema[]) ?? []) {
    if (p.in === 'path' || p.in === 'query')
      fields.push({ name: p.name as string, in: p.in, ...typeOf(p.schema as Schema) });
  }
  const content = ((op.requestBody as Schema)?.content ?? {}) as Record<string, Schema>;
  for (const [media, where] of [
    ['application/json', 'json'],
    ['application/x-www-form-urlencoded', 'form'],
  ] as const) {
    const seen = new Set<string>();
    for (const [name, s] of properties(doc, content[media]?.schema as Schema))
      if (!seen.has(name) && seen.add(name)) fields.push({ name, in: where, ...typeOf(s) });
  }
  return fields;
}

function typeOf(s: Schema | undefined): Pick<Field, 'type' | 'format' | 'enum'> {
  if (!s) return {};
  return {
    type: Array.isArray(s.type) ? (s.type as string[])[0] : (s.type as string | undefined),
    format: s.format as string | undefined,
    enum: (s.enum as unknown[] | undefined) ?? (s.const !== undefined ? [s.const] : undefined),
  };
}
