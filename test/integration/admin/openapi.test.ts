/**
 * The OpenAPI document against the app it describes: the routes come from the running app
 * (the Express router stack and the runtime lane, as the hostile matrix walks them), so a route
 * added without documentation, or documentation left behind by a removed route, fails here.
 * Each operation must be complete (operationId, schemas, an example, its problems and security),
 * the document must hold together ($refs, path parameters, tags), and /docs must render it from
 * this origin only.
 */
import { get as httpGet } from 'node:http';
import { startTestApp, type TestApp } from '../../../support/app.ts';
import { createApp } from '../../../api/app.ts';
import { apiDocument as openApiDocument } from '../../../api/routes/index.ts';
import { slugsNamed } from '../../../api/openapi/problem-examples.ts';
import { REDOC_BUNDLE_PATH } from '../../../api/routes/docs.ts';
import { PROBLEMS } from '../../../shared/errors/index.ts';
import {
  PROTOCOL_SHAPED,
  oauthShaped,
  expressRoutes,
  laneRoutes,
  openApiPath,
} from '../http/route-table.ts';
import { ADMIN_ROUTES } from './admin-routes.ts';

type Json = Record<string, unknown>;
interface Media {
  schema?: Json;
  example?: unknown;
  examples?: Record<string, unknown>;
}
interface Parameter {
  name: string;
  in: string;
  required?: boolean;
  schema?: Json;
  example?: unknown;
}
interface Operation {
  operationId?: string;
  summary?: string;
  tags?: string[];
  security?: unknown[];
  parameters?: Parameter[];
  requestBody?: { required?: boolean; content: Record<string, Media> };
  responses: Record<string, { description?: string; content?: Record<string, Media> }>;
}
interface Doc {
  paths: Record<string, Record<string, Operation>>;
  components: Json;
  tags: Array<{ name: string }>;
  'x-tagGroups': Array<{ tags: string[] }>;
}

const METHODS = new Set(['get', 'post', 'put', 'patch', 'delete']);
/** Endpoints whose errors are OAuth's `{error, error_description}` (RFC 6749 section 5.2), not problem details. */
/** The protocol rows by `METHOD /openapi/path`, as the document names its operations. */
const PROTOCOL_OPERATIONS = new Map(
  [...PROTOCOL_SHAPED].map(([key, row]) => {
    const [method, path] = key.split(' ');
    return [`${method} ${openApiPath(path)}`, row];
  }),
);
/** Operations anyone may call: no bearer token. */
const PUBLIC = new Set([
  '/',
  '/problems/{slug}',
  '/healthz',
  '/readyz',
  '/docs',
  REDOC_BUNDLE_PATH,
  '/console',
  '/console/{path}',
  '/api/v3/openapi.json',
  '/.well-known/jwks.json',
  '/.well-known/oauth-authorization-server',
  '/api/v3/auth/token',
  '/api/v3/auth/token/revoke',
  '/api/v3/auth/password/forgot',
  '/api/v3/auth/password/reset',
  '/api/authenticate/app',
  '/api/authenticate/refresh',
  '/v1/auth/approle/login',
]);

/** Every operation of the document as [key, path, method, operation]. */
function operationsOf(doc: Doc): Array<[string, string, string, Operation]> {
  return Object.entries(doc.paths).flatMap(([path, ops]) =>
    Object.entries(ops)
      .filter(([m]) => METHODS.has(m))
      .map(
        ([m, op]) =>
          [`${m.toUpperCase()} ${path}`, path, m, op] as [string, string, string, Operation],
      ),
  );
}

/** The media objects of an operation: its request body's and its responses'. */
const mediaOf = (op: Operation): Media[] => [
  ...Object.values(op.requestBody?.content ?? {}),
  ...Object.values(op.responses).flatMap((r) => Object.values(r.content ?? {})),
];

/** Follows a local JSON pointer (RFC 6901) through the document. */
function resolve(doc: unknown, ref: string): unknown {
  return ref
    .slice(2)
    .split('/')
    .map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce<unknown>(
      (node, key) =>
        node !== null && typeof node === 'object' && Object.hasOwn(node, key)
          ? (node as Json)[key]
          : undefined,
      doc,
    );
}

describe('the OpenAPI document describes every route of the app, and /docs renders it', () => {
  let app: TestApp;
  let doc: Doc;
  let routes: string[];
  beforeAll(async () => {
    app = await startTestApp();
    doc = openApiDocument(app.config.publicBaseUrl) as unknown as Doc;
    const found = [...expressRoutes(createApp(app.ctx)), ...laneRoutes()].map(
      (r) => `${r.method} ${openApiPath(r.path)}`,
    );
    routes = [...new Set(found)].sort();
  });
  afterAll(async () => {
    await app.stop();
  });

  it("when the app's routes (Express and the runtime lane) are walked, then each is documented and the document has no other path", () => {
    const documented = operationsOf(doc)
      .map(([key]) => key)
      .sort();
    const served = new Set(routes);
    const undocumented = routes.filter((r) => !documented.includes(r));
    console.log(
      `OpenAPI coverage: ${routes.length - undocumented.length} documented / ${routes.length} app routes (${documented.length} operations in the document)`,
    );
    expect(routes.length).toBeGreaterThan(100);
    expect(undocumented).toEqual([]);
    expect(documented.filter((r) => !served.has(r))).toEqual([]);
  });

  it('when each operation is read, then it has a unique operationId, a summary, tags, a success response and at least one example', () => {
    const ids = new Map<string, string[]>();
    const incomplete: string[] = [];
    for (const [key, , , op] of operationsOf(doc)) {
      if (!op.operationId) incomplete.push(`${key}: no operationId`);
      else ids.set(op.operationId, [...(ids.get(op.operationId) ?? []), key]);
      if (!op.summary) incomplete.push(`${key}: no summary`);
      if (!op.tags?.length) incomplete.push(`${key}: no tags`);
      // A redirect (GET / to /docs) is that operation's success.
      if (!Object.keys(op.responses).some((s) => /^[23]\d\d$/.test(s)))
        incomplete.push(`${key}: no success response`);
      const examples = mediaOf(op).some(
        (m) =>
          m.example !== undefined ||
          (m.examples !== undefined && Object.keys(m.examples).length > 0),
      );
      if (!examples && !(op.parameters ?? []).some((p) => p.example !== undefined))
        incomplete.push(`${key}: no example`);
    }
    expect(incomplete).toEqual([]);
    expect([...ids].filter(([, keys]) => keys.length > 1)).toEqual([]);
  });

  it('when each request body, response and parameter is read, then it has a schema, and errors have the problem (or OAuth) shape', () => {
    const missing: string[] = [];
    for (const [key, path, , op] of operationsOf(doc)) {
      for (const [media, m] of Object.entries(op.requestBody?.content ?? {}))
        if (!m.schema) missing.push(`${key}: request ${media} without a schema`);
      for (const p of op.parameters ?? [])
        if (!p.schema) missing.push(`${key}: parameter ${p.name} without a schema`);
      for (const [status, r] of Object.entries(op.responses)) {
        if (!r.description) missing.push(`${key}: ${status} without a description`);
        for (const [media, m] of Object.entries(r.content ?? {}))
          if (!m.schema) missing.push(`${key}: ${status} ${media} without a schema`);
        if (!/^[45]/.test(status)) continue;
        const protocol = PROTOCOL_OPERATIONS.get(key);
        const shape = protocol
          ? r.content?.[protocol.errorMedia]?.schema?.$ref === protocol.errorSchema
          : oauthShaped(path)
            ? JSON.stringify(r.content?.['application/json']?.schema ?? {}).includes(
                '#/components/schemas/OAuthError',
              )
            : r.content?.['application/problem+json']?.schema?.$ref ===
              '#/components/schemas/Problem';
        // /readyz answers 503 with its checks, not a problem: the body says which dependency is down.
        if (!shape && key !== 'GET /readyz')
          missing.push(
            `${key}: ${status} is not ${protocol ? `the ${protocol.protocol} error` : oauthShaped(path) ? 'the OAuth error' : 'a problem'}`,
          );
      }
    }
    expect(missing).toEqual([]);
  });

  it('when a problem response names catalogued slugs, then each answers that status in the catalogue, and its example is the rendered problem', () => {
    const statusOf = new Map(
      Object.values(PROBLEMS).map((p) => [p.slug as string, p.status as number]),
    );
    const titleOf = new Map(
      Object.values(PROBLEMS).map((p) => [p.slug as string, p.title as string]),
    );
    const wrong: string[] = [];
    for (const [key, , , op] of operationsOf(doc)) {
      for (const [status, r] of Object.entries(op.responses)) {
        const media = r.content?.['application/problem+json'];
        if (!media) continue;
        for (const slug of slugsNamed(r.description ?? ''))
          if (statusOf.get(slug) !== Number(status))
            wrong.push(
              `${key}: ${status} names ${slug}, which the catalogue answers ${statusOf.get(slug)}`,
            );
        const example = media.example as
          { type?: string; title?: string; status?: number } | undefined;
        if (!example) {
          wrong.push(`${key}: ${status} without an example`);
          continue;
        }
        const slug = example.type?.split('/problems/')[1] ?? '';
        if (
          example.status !== Number(status) ||
          titleOf.get(slug) !== example.title ||
          !example.type?.startsWith(`${app.config.publicBaseUrl}/problems/`)
        )
          wrong.push(`${key}: ${status} example ${JSON.stringify(example)}`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it("when each operation's security is read, then only the public endpoints need no token and the rest take the bearer token", () => {
    expect(doc).toHaveProperty('security', [{ bearer: [] }]);
    // `security: []` lifts the document's requirement; `[{}, ...]` makes it optional (OpenAPI 3.1 section 4.8.30).
    const open = operationsOf(doc)
      .filter(
        ([, , , op]) =>
          Array.isArray(op.security) &&
          (op.security.length === 0 ||
            op.security.some((s) => Object.keys(s as Json).length === 0)),
      )
      .map(([, path]) => path);
    // A path open for more than one method (the Vault login, POST and PUT) is named once.
    expect([...new Set(open)].sort()).toEqual([...PUBLIC].sort());
    for (const [key, , , op] of operationsOf(doc)) {
      for (const s of op.security ?? [])
        for (const scheme of Object.keys(s as Json))
          expect([key, scheme in (doc.components.securitySchemes as Json)]).toEqual([key, true]);
    }
  });

  it('when the admin operations are read, then each lists 401 and 403, and one whose JSON body is required has an example', () => {
    // The isolation matrix sends the documented example, so a refusal proves the guard, not bad input.
    expect(ADMIN_ROUTES.length).toBeGreaterThan(50);
    for (const r of ADMIN_ROUTES) {
      const op = doc.paths[r.path][r.method.toLowerCase()];
      expect([r.path, Object.keys(op.responses)]).toEqual([
        r.path,
        expect.arrayContaining(['401', '403']),
      ]);
      const json = op.requestBody?.content['application/json'];
      if (json && op.requestBody?.required)
        expect([r.method, r.path, json.example !== undefined]).toEqual([r.method, r.path, true]);
    }
  });

  it('when the auth operations are read, then they need no bearer token (introspection excepted) and describe OAuth errors', () => {
    for (const path of [
      '/api/v3/auth/token/revoke',
      '/api/v3/auth/password/forgot',
      '/api/v3/auth/password/reset',
      '/api/authenticate/app',
    ]) {
      expect([path, doc.paths[path].post.security]).toEqual([path, []]);
    }
    // The token endpoint: no bearer token; a workload may authenticate by HTTP Basic (client_secret_basic).
    expect(doc.paths['/api/v3/auth/token'].post.security).toEqual([{}, { clientSecretBasic: [] }]);
    // Introspection: the caller's bearer token, or a resource server's client credentials (RFC 7662 2.1).
    expect(doc.paths['/api/v3/auth/token/introspect'].post.security).toEqual([
      { bearer: [] },
      { clientSecretBasic: [] },
    ]);
    expect(Object.keys(doc.paths['/api/v3/auth/token'].post.responses)).toEqual(
      expect.arrayContaining(['200', '400', '401', '429']),
    );
  });

  it('when a path has parameters, then every operation on it declares exactly those in path, required', () => {
    const wrong: string[] = [];
    for (const [key, path, , op] of operationsOf(doc)) {
      const names = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort();
      const declared = (op.parameters ?? []).filter((p) => p.in === 'path');
      if (JSON.stringify(declared.map((p) => p.name).sort()) !== JSON.stringify(names))
        wrong.push(`${key}: declares ${declared.map((p) => p.name).join(', ') || 'none'}`);
      if (declared.some((p) => p.required !== true))
        wrong.push(`${key}: a path parameter not required`);
    }
    expect(wrong).toEqual([]);
  });

  it('when every $ref of the document is followed, then it resolves', () => {
    const refs = [...JSON.stringify(doc).matchAll(/"\$ref":"([^"]+)"/g)].map((m) => m[1]);
    expect(refs.length).toBeGreaterThan(0);
    expect(
      [...new Set(refs)].filter((ref) => !ref.startsWith('#/') || resolve(doc, ref) === undefined),
    ).toEqual([]);
  });

  it("when the tags are read, then every operation's tag is declared and in a group of the rendered reference", () => {
    const declared = new Set(doc.tags.map((t) => t.name));
    const grouped = new Set(doc['x-tagGroups'].flatMap((g) => g.tags));
    const used = new Set(operationsOf(doc).flatMap(([, , , op]) => op.tags ?? []));
    expect([...used].filter((t) => !declared.has(t) || !grouped.has(t))).toEqual([]);
    expect([...declared].filter((t) => !used.has(t))).toEqual([]);
  });

  it("when GET /api/v3/openapi.json is called, then it answers the document for the deployment's base URL", async () => {
    const res = await fetch(`${app.url}/api/v3/openapi.json`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await res.json()).toEqual(JSON.parse(JSON.stringify(doc)));
  });

  it('when GET /docs is called, then it is an HTML page that loads the renderer from this origin only, under a CSP without other origins', async () => {
    const res = await fetch(`${app.url}/docs`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await res.text();
    expect(html).toContain(`<script src="${REDOC_BUNDLE_PATH}"></script>`);
    expect(html).toContain('spec-url="/api/v3/openapi.json"');
    // Nothing from another origin: no absolute URL, no protocol-relative one, no inline script.
    expect(html).not.toMatch(/(https?:)?\/\/[a-z0-9]/i);
    expect(html.match(/<script[^>]*>[^<]+<\/script>/g)).toBeNull();
    const csp = res.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toMatch(/https?:|'unsafe-eval'|\*/);
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
  });

  it('when the renderer bundle is fetched, then it answers 200 JavaScript from the installed package', async () => {
    const res = await fetch(`${app.url}${REDOC_BUNDLE_PATH}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/javascript/);
    const body = await res.text();
    expect(body.length).toBeGreaterThan(500_000);
    expect(body).toContain('Redoc');
    expect(res.headers.get('cache-control')).toBe('public, max-age=86400');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    // A browser revalidating its day-old copy hears 304 Not Modified (node:http: fetch would
    // add Cache-Control: no-cache to a conditional request, which asks for the full answer).
    const since = res.headers.get('last-modified') ?? '';
    expect(since).not.toBe('');
    const again = await new Promise<number | undefined>((resolve, reject) =>
      httpGet(
        `${app.url}${REDOC_BUNDLE_PATH}`,
        { headers: { 'if-modified-since': since } },
        (r) => {
          r.resume();
          r.on('end', () => resolve(r.statusCode));
        },
      ).on('error', reject),
    );
    expect(again).toBe(304);
    // ... as the row's answer, not as a failure after the answer began.
    expect(await fetch(`${app.url}/healthz`).then((r) => r.status)).toBe(200);
    expect(app.logText()).not.toContain('answered 304');
    expect((await fetch(`${app.url}/docs/nothing-here.js`)).status).toBe(404);
  });
});
