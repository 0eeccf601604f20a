/**
 * The import rules per folder: the folders are the layers, and lint keeps them so.
 * One table, read by the ESLint rule `keyward/layers` (eslint.config.js). Paths are
 * project-relative folder prefixes; a package rule names the package (`express` also forbids
 * `express/...`). Type-only imports count: a layer that needs another's types needs its code.
 */
import { dirname, relative, resolve, sep } from 'node:path';
import type { Rule } from 'eslint';

/** The one file under api/routes/ that may import route files: the table that mounts them all. */
export const ROUTE_TABLE = 'api/routes/index.ts';

/** The rows and row pieces that two route files share: every route file may import them. */
export const ROUTE_SHARED = 'api/routes/shared/';

/** One import rule: files under `files` never import anything under `forbid`. */
export interface LayerRule {
  files: readonly string[];
  except?: readonly string[];
  forbid: readonly string[];
  /** Targets under `forbid` that stay importable. */
  allow?: readonly string[];
  why: string;
}

/** The API process's own parts, with Express: what rooms that take plain values in never import. */
const API_PROCESS = [
  'express',
  'api/context.ts',
  'api/services/',
  'api/access/',
  'api/http/',
  'api/rows/',
  'api/schemas/',
  'api/middleware/',
  'api/routes/',
  'api/openapi/',
] as const;

/** The import rules of the project's folders. */
export const LAYER_RULES: readonly LayerRule[] = [
  {
    files: ['workers/', 'shared/'],
    forbid: ['api/'],
    why: 'workers/ and shared/ never import api/: what both sides need lives in shared/',
  },
  {
    files: ['api/', 'shared/'],
    forbid: ['workers/'],
    why: "workers/ is the queue worker process: the API's threads live in api/threads/, what both processes run in shared/",
  },
  {
    files: ['api/threads/'],
    forbid: API_PROCESS,
    why: 'a thread has no process context: it takes its inputs by message and runs shared/ code',
  },
  {
    files: ['api/services/'],
    forbid: [
      'express',
      'api/routes/',
      'api/middleware/',
      'api/http/',
      'api/rows/',
      'api/access/',
      'api/open-context.ts',
    ],
    why: 'services know nothing of HTTP, so a test or a worker can call them; they take the context (api/context.ts, types only) and never build it',
  },
  {
    files: ['api/access/'],
    forbid: ['express', 'api/http/', 'api/rows/', 'api/middleware/', 'api/routes/', 'api/openapi/'],
    why: 'the access checks are transport-free: Express, the route rows and the runtime lane all call them',
  },
  {
    files: ['api/http/'],
    forbid: ['api/rows/', 'api/schemas/', 'api/middleware/', 'api/routes/'],
    why: 'api/http/ is the transport (bodies, deadlines, connections, the access line, the wire protocols): the route rows stand on it, never under it, and it never takes an Express adapter of api/middleware/',
  },
  {
    files: ['api/rows/'],
    forbid: ['api/middleware/', 'api/routes/'],
    why: 'the row framework serves every route file and the runtime lane: it reads no route file and no Express adapter of api/middleware/',
  },
  {
    files: ['api/schemas/'],
    forbid: API_PROCESS.filter((room) => room !== 'api/schemas/'),
    why: 'api/schemas/ is the vocabulary the rows declare and the services type themselves by: TypeBox only, so both can import it',
  },
  {
    files: ['api/middleware/'],
    forbid: ['api/routes/', 'api/openapi/'],
    why: 'middleware/ holds thin Express adapters over api/access/ and api/http/, below the routes',
  },
  {
    files: ['api/routes/'],
    except: [ROUTE_TABLE],
    forbid: ['api/routes/'],
    allow: [ROUTE_SHARED],
    why: `no route imports another (what two route files share lives in ${ROUTE_SHARED}); ${ROUTE_TABLE} mounts them all`,
  },
  {
    files: ['console/'],
    forbid: ['api/', 'shared/', 'workers/', 'bin/', 'scripts/', 'test/'],
    why: 'the console runs in the browser and talks to the API over HTTP only: it imports nothing of the server',
  },
  {
    files: ['bin/'],
    forbid: ['api/'],
    why: 'the CLI talks to the API over HTTP and never imports it',
  },
  {
    files: ['bench/', 'scripts/', 'support/'],
    forbid: ['test/'],
    why: 'test/ is what jest runs: what the benches, the scripts and the tests share lives in support/',
  },
];

/** Whether a project path or package specifier falls under a rule entry. */
function covers(entry: string, target: string): boolean {
  if (entry.endsWith('/')) return target.startsWith(entry);
  return target === entry || target.startsWith(`${entry}/`);
}

/**
 * The rule an import breaks, or null. `from` is the importing file and `target` the imported
 * file, both project-relative with `/`, or a package specifier (`express`, `node:fs`).
 */
export function brokenRule(
  from: string,
  target: string,
  rules: readonly LayerRule[] = LAYER_RULES,
): LayerRule | null {
  for (const rule of rules) {
    if (!rule.files.some((entry) => covers(entry, from))) continue;
    if (rule.except?.includes(from)) continue;
    if (!rule.forbid.some((entry) => covers(entry, target))) continue;
    if (!rule.allow?.some((entry) => covers(entry, target))) return rule;
  }
  return null;
}

/** The project-relative target of a specifier written in `file` (a package stays as written). */
export function importTarget(cwd: string, file: string, specifier: string): string {
  if (!specifier.startsWith('.')) return specifier;
  return toPosix(relative(cwd, resolve(dirname(file), specifier)));
}

function toPosix(path: string): string {
  return sep === '/' ? path : path.split(sep).join('/');
}

/** ESLint rule `keyward/layers`: reports every import that breaks a rule of {@link LAYER_RULES}. */
export const layersRule: Rule.RuleModule = {
  meta: {
    type: 'problem',
    docs: {
      description:
        'Enforce the import rules per folder (api, services, routes, shared, workers, bin)',
    },
    schema: [],
    messages: { broken: "'{{target}}' is not importable from {{from}}: {{why}}." },
  },
  create(context) {
    const from = toPosix(relative(context.cwd, context.filename));
    const check = (node: Rule.Node, specifier: unknown): void => {
      if (typeof specifier !== 'string') return;
      const target = importTarget(context.cwd, context.filename, specifier);
      const rule = brokenRule(from, target);
      if (rule)
        context.report({
          node,
          messageId: 'broken',
          data: { target: specifier, from, why: rule.why },
        });
    };
    return {
      ImportDeclaration: (node) => check(node, node.source.value),
      ExportNamedDeclaration: (node) => check(node, node.source?.value),
      ExportAllDeclaration: (node) => check(node, node.source.value),
      ImportExpression: (node) =>
        check(node, node.source.type === 'Literal' ? node.source.value : undefined),
      // `import('../api/x.ts').T` in a type position: typescript-eslint's TSImportType.
      TSImportType: (
        node: { argument?: { type: string; literal?: { value?: unknown } } } & Rule.Node,
      ) =>
        check(
          node,
          node.argument?.type === 'TSLiteralType' ? node.argument.literal?.value : undefined,
        ),
    };
  },
};

/** The local plugin that carries the rule (registered as `keyward` in eslint.config.js). */
export const layersPlugin = { meta: { name: 'keyward-layers' }, rules: { layers: layersRule } };
