/**
 * Code comments point to the repository's own documents for the reasons behind the code: every
 * `docs/*.md` a source file names exists, and a section it names as `docs/x.md ("Heading")` is a
 * heading of that file, so a renamed page or section fails here instead of leaving a stale pointer.
 */
import { readFileSync, readdirSync, existsSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

const ROOT = new URL('../../..', import.meta.url).pathname;
const SOURCES = ['api', 'shared', 'workers', 'bin', 'scripts', 'bench'];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === 'node_modules' ? [] : sourceFiles(path);
    return /\.(ts|js)$/.test(name) ? [path] : [];
  });
}

const headingsOf = (doc: string): Set<string> =>
  new Set(
    [...readFileSync(join(ROOT, doc), 'utf8').matchAll(/^#{1,6} (.+)$/gm)].map((m) =>
      m[1].replace(/`/g, '').trim(),
    ),
  );

describe('pointers from code comments to docs/', () => {
  it('when the sources are scanned, then every document and section they point to exists', () => {
    const stale: string[] = [];
    let pointers = 0;
    for (const file of SOURCES.flatMap((d) => sourceFiles(join(ROOT, d)))) {
      const text = readFileSync(file, 'utf8').replace(/\n\s*\*\s*/g, ' ');
      for (const m of text.matchAll(/\bdocs\/([a-z0-9-]+\.md)(?: \("([^"]+)"\))?/g)) {
        pointers += 1;
        const doc = `docs/${m[1]}`;
        const where = relative(ROOT, file);
        if (!existsSync(join(ROOT, doc))) stale.push(`${where}: ${doc} does not exist`);
        else if (m[2] && !headingsOf(doc).has(m[2].replace(/`/g, '')))
          stale.push(`${where}: ${doc} has no section "${m[2]}"`);
      }
    }
    expect(pointers).toBeGreaterThan(20);
    expect(stale).toEqual([]);
  });
});
