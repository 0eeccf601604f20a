/**
 * Each route file names the test files that exercise it, in a `Tests:` line of its top comment, so
 * a reader who changes an endpoint finds what to run in one step; a renamed or deleted test makes
 * the line stale, and this guard says where.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = new URL('../../../', import.meta.url).pathname;
const ROUTES = 'api/routes';

/** Every file under api/routes/, project-relative. */
const routeFiles = (): string[] =>
  readdirSync(join(ROOT, ROUTES), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name).slice(ROOT.length))
    .sort();

/**
 * The paths a file's top comment lists after `Tests:` (on that line and the indented lines that
 * continue it), or null when it has no such line.
 */
function listedTests(source: string): string[] | null {
  const head = /^\/\*\*[\s\S]*?\*\//.exec(source)?.[0];
  if (!head) return null;
  const lines = head.split('\n');
  const at = lines.findIndex((l) => /^ \* Tests: /.test(l));
  if (at < 0) return null;
  const listed = [lines[at]];
  for (const l of lines.slice(at + 1)) {
    if (!/^ \* {3}\S/.test(l)) break;
    listed.push(l);
  }
  return listed.join(' ').match(/\btest\/[\w./-]+[\w/]/g) ?? [];
}

describe('route files name their tests', () => {
  it('when the route files are read, then there are some (the walk finds api/routes/)', () => {
    expect(routeFiles().length).toBeGreaterThan(20);
  });

  it.each(routeFiles())(
    'when %s is read, then its top comment lists its test files and each of them exists',
    (file) => {
      const listed = listedTests(readFileSync(join(ROOT, file), 'utf8'));
      expect({ file, hasTestsLine: listed !== null }).toEqual({ file, hasTestsLine: true });
      expect(listed!.filter((p) => p.endsWith('.test.ts')).length).toBeGreaterThan(0);
      expect(listed!.filter((p) => !existsSync(join(ROOT, p)))).toEqual([]);
    },
  );

  it('when a header lists a missing test or none, then the reader finds it (the parser itself)', () => {
    const header = (body: string) => `/**\n * An area.\n *\n${body} */\nexport {};\n`;
    expect(
      listedTests(header(' * Tests: test/a.test.ts, test/b.test.ts,\n *   test/c/d.test.ts\n')),
    ).toEqual(['test/a.test.ts', 'test/b.test.ts', 'test/c/d.test.ts']);
    expect(
      listedTests(header(' * Tests: test/a.test.ts, and 3 more under test/integration/\n')),
    ).toEqual(['test/a.test.ts', 'test/integration/']);
    expect(listedTests(header(' * No tests line.\n'))).toBeNull();
    expect(listedTests('export const x = 1;\n')).toBeNull();
  });
});
