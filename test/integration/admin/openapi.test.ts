import type { Router } from 'express';
import { loadConfig } from '../../../shared/config/index.ts';
import type { AppContext } from '../../../api/context.ts';
import { createAdminRouter } from '../../../api/routes/admin/index.ts';
import { createAuthRouter } from '../../../api/routes/auth.ts';
import { createWellKnownRouter } from '../../../api/routes/well-known.ts';
import { createLegacyAuthRouter } from '../../../api/routes/legacy-auth.ts';
import { createLegacyMigrationRouter } from '../../../api/routes/legacy-migration.ts';
import { openApiDocument } from '../../../api/openapi/index.ts';
import { ADMIN_ROUTES, OTHER_ROUTES } from './admin-routes.ts';

interface Layer { route?: { path: string; methods: Record<string, boolean> }; handle?: { stack?: Layer[] }; rawPath?: unknown }

/** Every `METHOD /path` a router registers, with nested routers' mount paths joined and `:param` written `{param}`. */
function routesOf(stack: Layer[], prefix: string): string[] {
  const out: string[] = [];
  for (const layer of stack) {
    if (layer.route) {
      const path = `${prefix}${layer.route.path}`.replace(/\/$/, '').replace(/:(\w+)/g, '{$1}');
      for (const m of Object.keys(layer.route.methods)) if (m !== '_all') out.push(`${m.toUpperCase()} ${path}`);
    } else if (layer.handle?.stack && typeof layer.rawPath === 'string') {
      out.push(...routesOf(layer.handle.stack, `${prefix}${layer.rawPath === '/' ? '' : layer.rawPath}`));
    }
  }
  return out;
}

describe('the OpenAPI document covers the admin and auth routes', () => {
  // The routers only read configuration while being built; nothing here touches a database.
  const ctx = { config: loadConfig({ DATA_DIR: '/tmp/keyward-openapi-test', KEYWARD_MASTER_KEY: Buffer.alloc(32, 1).toString('base64') }) } as unknown as AppContext;
  const stackOf = (r: Router) => (r as unknown as { stack: Layer[] }).stack;
  const registered = [
    ...routesOf(stackOf(createAdminRouter(ctx)), '/api/v3/admin'),
    ...routesOf(stackOf(createAuthRouter(ctx)), '/api/v3/auth'),
    ...routesOf(stackOf(createWellKnownRouter(ctx)), ''),
    ...routesOf(stackOf(createLegacyAuthRouter(ctx)), ''),
    ...routesOf(stackOf(createLegacyMigrationRouter(ctx)), ''),
  ].sort();
  const doc = openApiDocument('https://keyward.example') as { paths: Record<string, Record<string, { responses: Record<string, unknown>; requestBody?: unknown; security?: unknown[] }>>; components: { schemas: Record<string, unknown> } };

  it('when the routers are walked, then they register exactly the routes of the isolation table', () => {
    const table = [...ADMIN_ROUTES, ...OTHER_ROUTES].map((r) => `${r.method} ${r.path}`).sort();
    expect(registered.length).toBeGreaterThan(50);
    expect(registered).toEqual(table);
  });

  it('when each registered route is looked up, then the document has the operation with responses, and admin ones list their problems', () => {
    const missing = registered.filter((r) => {
      const [method, path] = r.split(' ');
      return !doc.paths[path]?.[method.toLowerCase()]?.responses;
    });
    expect(missing).toEqual([]);
    for (const r of ADMIN_ROUTES) {
      const op = doc.paths[r.path][r.method.toLowerCase()];
      expect([r.path, Object.keys(op.responses)]).toEqual([r.path, expect.arrayContaining(['401', '403'])]);
      expect([r.path, Object.keys(op.responses).some((s) => /^2/.test(s))]).toEqual([r.path, true]);
      if (r.body !== undefined) expect([r.method, r.path, Boolean(op.requestBody)]).toEqual([r.method, r.path, true]);
    }
  });

  it('when the auth operations are read, then they need no bearer token (introspection excepted) and describe OAuth errors', () => {
    for (const path of ['/api/v3/auth/token/revoke', '/api/v3/auth/password/forgot', '/api/v3/auth/password/reset', '/api/authenticate/app']) {
      expect([path, doc.paths[path].post.security]).toEqual([path, []]);
    }
    // The token endpoint: no bearer token; a workload may authenticate by HTTP Basic (client_secret_basic).
    expect(doc.paths['/api/v3/auth/token'].post.security).toEqual([{}, { clientSecretBasic: [] }]);
    expect(doc.paths['/api/v3/auth/token/introspect'].post.security).toBeUndefined();
    expect(JSON.stringify(doc.paths['/api/v3/auth/token'].post.responses)).toContain('#/components/schemas/OAuthError');
    expect(Object.keys(doc.paths['/api/v3/auth/token'].post.responses)).toEqual(expect.arrayContaining(['200', '400', '401', '429']));
  });

  it('when an admin or auth path has parameters, then every operation on it declares each of them in path', () => {
    const ours = new Set([...ADMIN_ROUTES, ...OTHER_ROUTES].map((r) => r.path));
    for (const [path, ops] of Object.entries(doc.paths).filter(([p]) => ours.has(p))) {
      const names = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort();
      for (const [method, op] of Object.entries(ops)) {
        const declared = ((op as { parameters?: Array<{ name: string; in: string }> }).parameters ?? []).filter((p) => p.in === 'path').map((p) => p.name).sort();
        expect([method, path, declared]).toEqual([method, path, names]);
      }
    }
  });

  it('when every $ref of the document is followed, then it resolves', () => {
    const refs = [...JSON.stringify(doc).matchAll(/"\$ref":"#\/components\/schemas\/(\w+)"/g)].map((m) => m[1]);
    expect(refs.length).toBeGreaterThan(0);
    for (const name of new Set(refs)) expect([name, name in doc.components.schemas]).toEqual([name, true]);
  });
});
