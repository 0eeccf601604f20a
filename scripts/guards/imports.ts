/**
 * The project's import graph, read without running anything: which source files there are and
 * which project files each one imports. Used by the cycle check; the ESLint layer rule resolves
 * the same way (a relative specifier is a path with its `.ts` extension, as Node 24 runs them).
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import ts from 'typescript';

/** The folders that hold the project's own TypeScript (everything Node or jest runs). */
export const SOURCE_FOLDERS = ['api', 'shared', 'workers', 'bin', 'bench', 'scripts', 'test'];

/** Folders never read: installed, generated or runtime data. */
const SKIPPED = new Set(['node_modules', 'data', 'coverage', 'results']);

/** One import of one file: the specifier as written and whether the whole statement is erased. */
export interface ImportRef {
  specifier: string;
  typeOnly: boolean;
}

/** Every `.ts` file under the given folders of root, as root-relative POSIX paths, sorted. */
export function listSourceFiles(
  root: string,
  folders: readonly string[] = SOURCE_FOLDERS,
): string[] {
  const files: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const full = join(dir, entry.name);
      if (entry.isDirectory()) {
        if (!SKIPPED.has(entry.name)) walk(full);
      } else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) {
        files.push(toPosix(relative(root, full)));
      }
    }
  };
  for (const folder of folders) {
    const dir = join(root, folder);
    if (existsSync(dir) && statSync(dir).isDirectory()) walk(dir);
  }
  return files.sort();
}

/**
 * The static imports and re-exports of a module's text. Dynamic `import()` is left out: it loads
 * after the importer has finished evaluating, so it cannot take part in a load-order cycle.
 */
export function importsOf(fileName: string, text: string): ImportRef[] {
  const source = ts.createSourceFile(
    fileName,
    text,
    ts.ScriptTarget.Latest,
    false,
    ts.ScriptKind.TS,
  );
  const refs: ImportRef[] = [];
  for (const statement of source.statements) {
    if (ts.isImportDeclaration(statement) && ts.isStringLiteral(statement.moduleSpecifier)) {
      refs.push({
        specifier: statement.moduleSpecifier.text,
        typeOnly: statement.importClause?.isTypeOnly ?? false,
      });
    } else if (
      ts.isExportDeclaration(statement) &&
      statement.moduleSpecifier &&
      ts.isStringLiteral(statement.moduleSpecifier)
    ) {
      refs.push({ specifier: statement.moduleSpecifier.text, typeOnly: statement.isTypeOnly });
    }
  }
  return refs;
}

/**
 * The root-relative path a relative specifier of `fromFile` names, or null for a package (or
 * `node:` built-in). `./x.js` and extensionless specifiers fall back to `x.ts` and `x/index.ts`.
 */
export function resolveImport(root: string, fromFile: string, specifier: string): string | null {
  if (!specifier.startsWith('.')) return null;
  const target = resolve(root, dirname(fromFile), specifier);
  const candidates = [
    target,
    target.replace(/\.js$/, '.ts'),
    `${target}.ts`,
    join(target, 'index.ts'),
  ];
  const found =
    candidates.find((candidate) => existsSync(candidate) && statSync(candidate).isFile()) ?? target;
  return toPosix(relative(root, found));
}

/** The project-internal import graph: each file and the files it imports (type-only edges marked). */
export function importGraph(
  root: string,
  folders: readonly string[] = SOURCE_FOLDERS,
): Map<string, Map<string, boolean>> {
  const graph = new Map<string, Map<string, boolean>>();
  for (const file of listSourceFiles(root, folders)) {
    const edges = new Map<string, boolean>();
    for (const ref of importsOf(file, readFileSync(join(root, file), 'utf8'))) {
      const target = resolveImport(root, file, ref.specifier);
      // A module imported both ways is a value edge: one value import is enough to load it.
      if (target !== null) edges.set(target, (edges.get(target) ?? true) && ref.typeOnly);
    }
    graph.set(file, edges);
  }
  return graph;
}

function toPosix(path: string): string {
  return sep === '/' ? path : path.split(sep).join('/');
}
