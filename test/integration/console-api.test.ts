/**
 * The console uses the public HTTP API only: every call its modules make, read from
 * their source, is an operation of the OpenAPI document with that method and path. A call to a
 * path the document does not have (a private endpoint, or a typo) fails here.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { apiDocument as openApiDocument } from '../../api/routes/index.ts';

const DIR = join(process.cwd(), 'console', 'js');

/** The console's modules with their source. */
function modules(): Array<[string, string]> {
  return readdirSync(DIR, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.js'))
    .map((f) => [f, readFileSync(join(DIR, f), 'utf8')]);
}

/** Constants a module names its paths with (`const P = '/api/...'`), for their uses. */
function constants(source: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const m of source.matchAll(/const ([A-Z]+) = '(\/[^']*)';/g)) out.set(m[1], m[2]);
  return out;
}

/** A path expression of the source as an OpenAPI-shaped path with anonymous parameters. */
function shape(expr: string, names: Map<string, string>): string {
  return (
    expr
      .replace(/^[`']|[`']$/g, '')
      .replace(/\$\{tenantPath\(\)\}/g, '/api/v3/admin/tenants/{}')
      .replace(/\$\{([A-Z]+)\}/g, (_, n: string) => names.get(n) ?? `<unknown ${n}>`)
      // A bare variable is an action segment (rotate, suspend, accept...): one literal segment.
      .replace(/\$\{([a-z]\w*)\}/g, '<segment>')
      .replace(/\$\{[^}]*\}/g, '{}')
      // A wildcard parameter (an upload's name) may span segments.
      .replace(/\{\}(\/\{\})+/g, '{}')
  );
}

/** Every [method, path] the console calls through api.js, and the token endpoints of session.js. */
function consoleCalls(): Array<[string, string, string]> {
  const calls: Array<[string, string, string]> = [];
  for (const [file, source] of modules()) {
    const names = constants(source);
    for (const m of source.matchAll(
      /\b(?:json|call)\(\s*'(GET|POST|PUT|PATCH|DELETE)',\s*(`[^`]*`|'[^']*'|[A-Z]+)/g,
    ))
      calls.push([file, m[1], shape(names.get(m[2]) ?? m[2], names)]);
    for (const m of source.matchAll(/fetch\(\s*([A-Z]+),\s*\{\s*method: '([A-Z]+)'/g))
      calls.push([file, m[2], names.get(m[1]) ?? `<unknown ${m[1]}>`]);
  }
  return calls;
}

describe("the console's calls", () => {
  it('when every call of the console is read, then each is an operation of the OpenAPI document', () => {
    const doc = openApiDocument('http://127.0.0.1:8080') as {
      paths: Record<string, Record<string, unknown>>;
    };
    const documented = new Set(
      Object.entries(doc.paths).flatMap(([path, ops]) =>
        Object.keys(ops).map((m) => `${m.toUpperCase()} ${path.replace(/\{[^}]+\}/g, '{}')}`),
      ),
    );
    const calls = consoleCalls();
    console.log(
      `console: ${calls.length} calls, ${new Set(calls.map((c) => `${c[1]} ${c[2]}`)).size} operations`,
    );
    expect(calls.length).toBeGreaterThan(30);
    const isDocumented = (method: string, path: string) => {
      const pattern = new RegExp(
        `^${method} ${path.replace(/[.*+?^$()|[\]\\{}]/g, '\\$&').replace(/<segment>/g, '[a-z-]+')}$`,
      );
      return [...documented].some((op) => pattern.test(op));
    };
    expect(calls.filter(([, method, path]) => !isDocumented(method, path))).toEqual([]);
  });
});
