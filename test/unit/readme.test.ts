import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { SCHEMA } from '../../shared/config/schema.ts';
import { CONFIG_DOC_URL, readmeConfigTable, readmeSection } from '../../scripts/config-table.ts';
import { DEFAULT_BOOTSTRAP_ADMIN_EMAIL } from '../../api/services/bootstrap.ts';

/** docs/*.md, as paths from the repository root. */
function markdownDocs(root: string): string[] {
  return readdirSync(join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`);
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');
}

/** The anchors a Markdown file's headings give (repeated headings get -1, -2, as on GitHub). */
function anchorsOf(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  const prose = markdown.replace(/^```[\s\S]*?^```/gm, '');
  for (const m of prose.matchAll(/^#{1,6} (.+)$/gm)) {
    const base = anchorOf(m[1]);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

describe('README', () => {
  it("when the administrator's login examples are read, then they use the e-mail the first start really creates", () => {
    // The README once logged in as root@example.com while the bootstrap administrator is admin@keyward.local.
    const root = new URL('../../', import.meta.url).pathname;
    const used: string[] = [];
    for (const doc of ['README.md', ...markdownDocs(root), 'console/README.md']) {
      const text = readFileSync(join(root, doc), 'utf8');
      for (const m of text.matchAll(/(?:login[^\n]*--email|username=)\s*([^\s`'"]+@[^\s`'"]+)/g))
        used.push(`${doc}: ${m[1]}`);
    }
    expect(used.length).toBeGreaterThan(0);
    expect(used.filter((u) => !u.endsWith(`: ${DEFAULT_BOOTSTRAP_ADMIN_EMAIL}`))).toEqual([]);
  });

  it('when the configuration table of docs/configuration.md is compared with the schema, then they are identical (else run node scripts/config-table.ts --write)', () => {
    const section = readmeSection(readFileSync(CONFIG_DOC_URL, 'utf8'));
    expect(section).not.toBeNull();
    expect(section).toBe(readmeConfigTable());
  });

  it('when the table is rendered, then it has one row per schema variable, in schema order', () => {
    const rows = readmeConfigTable().split('\n').slice(2);
    expect(rows.map((row) => /^\| `([A-Z0-9_]+)` \|/.exec(row)?.[1])).toEqual(
      Object.values(SCHEMA).map((f) => f.env),
    );
  });

  it('when the running code is scanned, then only the config schema and the Node-flags relaunch read process.env, and every variable they read is in the table', () => {
    const root = new URL('../../', import.meta.url).pathname;
    const files: string[] = [];
    const walk = (dir: string) => {
      for (const e of readdirSync(dir, { withFileTypes: true })) {
        const p = join(dir, e.name);
        if (e.isDirectory()) walk(p);
        else if (p.endsWith('.ts')) files.push(p);
      }
    };
    for (const dir of ['api', 'shared', 'workers']) walk(join(root, dir));
    const readers = files
      .filter((f) => readFileSync(f, 'utf8').includes('process.env'))
      .map((f) => relative(root, f))
      .sort();
    expect(readers).toEqual(['shared/config/index.ts', 'shared/node-flags.ts']);
    // The relaunch reads the service's own switch and Node's and glibc's variables it sets itself.
    const own = [
      ...readFileSync(join(root, 'shared/node-flags.ts'), 'utf8').matchAll(
        /process\.env\.([A-Z][A-Z0-9_]*)/g,
      ),
    ].map((m) => m[1]);
    const documented = new Set<string>(Object.values(SCHEMA).map((f) => f.env));
    expect(own.filter((name) => name.startsWith('KEYWARD_') && !documented.has(name))).toEqual([]);
  });

  it('when the links of README.md and docs/*.md are followed, then every file and every #anchor they name exists', () => {
    const root = new URL('../../', import.meta.url).pathname;
    const broken: string[] = [];
    let links = 0;
    for (const doc of ['README.md', ...markdownDocs(root), 'bench/results/design-figures.md']) {
      const text = readFileSync(join(root, doc), 'utf8');
      const prose = text.replace(/^```[\s\S]*?^```/gm, '');
      for (const [, target] of prose.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(target)) continue; // http(s), mailto: not followed
        links += 1;
        const [path, anchor] = target.split('#');
        const file = path === '' ? join(root, doc) : join(root, dirname(doc), path);
        if (!existsSync(file)) {
          broken.push(`${doc}: ${target} (no such file)`);
          continue;
        }
        if (anchor && file.endsWith('.md') && !anchorsOf(readFileSync(file, 'utf8')).has(anchor))
          broken.push(`${doc}: ${target} (no such heading)`);
      }
    }
    expect(links).toBeGreaterThan(20);
    expect(broken).toEqual([]);
  });
});
