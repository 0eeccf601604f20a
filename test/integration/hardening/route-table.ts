/**
 * The app's own route table and the input fields of each route, for the hostile-input matrix.
 * Routes come from the Express router stack of createApp(ctx) plus the runtime lane; fields from
 * the OpenAPI document where it describes the route, else from ROUTE_FIELDS below. A route with
 * neither is reported as unenumerable, so coverage cannot shrink without a failing test.
 */
import type { Express } from 'express';
import { CRYPTO_OPERATIONS } from '../../../api/routes/crypto.ts';

export interface AppRoute { method: string; path: string }

/** Where a field travels. */
export type FieldIn = 'path' | 'query' | 'json' | 'form';

export interface Field { name: string; in: FieldIn; type?: string; format?: string; enum?: unknown[] }

interface Layer { rawPath?: string | string[]; route?: { path: string; methods: Record<string, boolean> }; handle?: { stack?: Layer[] } }

const join = (prefix: string, path: string) => (path === '/' ? prefix || '/' : `${prefix}${path}`);

/** Every method and path the Express app routes, found by walking its router stack (router 2: layer.rawPath). */
export function expressRoutes(app: Express): AppRoute[] {
  const out: AppRoute[] = [];
  const walk = (stack: Layer[], prefix: string) => {
    for (const layer of stack) {
      const paths = layer.rawPath === undefined ? ['/'] : ([] as string[]).concat(layer.rawPath);
      for (const p of paths) {
        if (layer.route) {
          for (const method of Object.keys(layer.route.methods)) if (method !== '_all') out.push({ method: method.toUpperCase(), path: join(prefix, p) });
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

/** The runtime lane's routes (api/runtime-lane.ts serves these ahead of Express). */
export const laneRoutes = (): AppRoute[] => CRYPTO_OPERATIONS.map(([name]) => ({ method: 'POST', path: `/api/v3/crypto/${name}` }));

/** Express path → OpenAPI path: ":kid" and "*name" → "{kid}", "{name}". */
export const openApiPath = (path: string) => path.replace(/[:*](\w+)/g, '{$1}');

/** The path parameters of an Express path. */
export const pathParams = (path: string) => [...path.matchAll(/[:*](\w+)/g)].map((m) => m[1]);

const json = (name: string): Field => ({ name, in: 'json' });

/** The body members the runtime operations read (api/services/crypto/runtime.ts, runRuntime). */
const RUNTIME_FIELDS = ['kid', 'data', 'digest', 'ciphertext', 'signature', 'algorithm', 'version', 'context', 'items'];

/**
 * Fields of routes the OpenAPI document does not describe (runtime crypto, PQC and legacy routes).
 * A new undocumented route must be added here or to the document, or the matrix fails; an entry
 * for a route that is gone or now documented fails it too.
 */
export const ROUTE_FIELDS: Record<string, Field[]> = {
  'GET /api/key-management/keys': [],
  'POST /api/key-management/keys': ['type', 'kid', 'usage'].map(json),
  'POST /api/key-management/keys/import': ['pem', 'key', 'type', 'kid', 'usage', 'password'].map(json),
  'GET /api/v3/pqc/keys': [{ name: 'cursor', in: 'query' }, { name: 'limit', in: 'query' }],
  'GET /api/v3/crypto/keys': [{ name: 'cursor', in: 'query' }, { name: 'limit', in: 'query' }],
  // /api/v3/crypto/* is in the OpenAPI document (api/openapi/crypto.ts); the legacy paths serve the first four operations only.
  ...Object.fromEntries(['encrypt', 'decrypt', 'sign', 'verify'].map((name) => [`POST /api/crypto/${name}`, RUNTIME_FIELDS.map(json)])),
  ...Object.fromEntries(['encapsulate', 'decapsulate', 'sign', 'verify'].map((name) => [`POST /api/v3/pqc/${name}`, RUNTIME_FIELDS.map(json)])),
};

/** Names tried on every route besides its own fields, in its query and body. */
export const GENERIC_FIELDS = ['id', 'tenantId', 'kid', 'name'];

type Schema = Record<string, unknown>;

/** Properties of a schema, through $ref, allOf, oneOf and anyOf. */
function properties(doc: Schema, schema: Schema | undefined, depth = 0): Array<[string, Schema]> {
  if (!schema || depth > 5) return [];
  const ref = schema.$ref as string | undefined;
  if (ref) return properties(doc, ref.split('/').slice(1).reduce<Schema | undefined>((o, k) => o?.[k] as Schema | undefined, doc), depth + 1);
  const own = Object.entries((schema.properties as Record<string, Schema>) ?? {});
  const nested = ['allOf', 'oneOf', 'anyOf'].flatMap((k) => ((schema[k] as Schema[]) ?? []).flatMap((s) => properties(doc, s, depth + 1)));
  return [...own, ...nested];
}

/** The fields of one route from the OpenAPI document, or null when the document does not describe it. */
export function openApiFields(doc: Schema, route: AppRoute): Field[] | null {
  const op = ((doc.paths as Record<string, Record<string, Schema>>)[openApiPath(route.path)] ?? {})[route.method.toLowerCase()];
  if (!op) return null;
  const fields: Field[] = [];
  for (const p of (op.parameters as Schema[]) ?? []) {
    if (p.in === 'path' || p.in === 'query') fields.push({ name: p.name as string, in: p.in, ...typeOf(p.schema as Schema) });
  }
  const content = ((op.requestBody as Schema)?.content ?? {}) as Record<string, Schema>;
  for (const [media, where] of [['application/json', 'json'], ['application/x-www-form-urlencoded', 'form']] as const) {
    const seen = new Set<string>();
    for (const [name, s] of properties(doc, content[media]?.schema as Schema)) if (!seen.has(name) && seen.add(name)) fields.push({ name, in: where, ...typeOf(s) });
  }
  return fields;
}

function typeOf(s: Schema | undefined): Pick<Field, 'type' | 'format' | 'enum'> {
  if (!s) return {};
  return { type: Array.isArray(s.type) ? (s.type as string[])[0] : (s.type as string | undefined), format: s.format as string | undefined, enum: (s.enum as unknown[] | undefined) ?? (s.const !== undefined ? [s.const] : undefined) };
}
