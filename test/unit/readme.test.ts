import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { SCHEMA } from '../../shared/config/index.ts';
import { README_URL, readmeConfigTable, readmeSection } from '../../scripts/config-table.ts';
import { DEFAULT_BOOTSTRAP_ADMIN_EMAIL } from '../../api/services/bootstrap.ts';

describe('README', () => {
  it("when the administrator's login examples are read, then they use the e-mail the first start really creates", () => {
    // Issue 27: the README logged in as root@example.com while the bootstrap administrator is admin@keyward.local.
    const root = new URL('../../', import.meta.url).pathname;
    const used: string[] = [];
    for (const doc of ['README.md', 'docs/batch-migration.md', 'console/README.md']) {
      const text = readFileSync(join(root, doc), 'utf8');
      for (const m of text.matchAll(/(?:login[^\n]*--email|username=)\s*([^\s`'"]+@[^\s`'"]+)/g))
        used.push(`${doc}: ${m[1]}`);
    }
    expect(used.length).toBeGreaterThan(0);
    expect(used.filter((u) => !u.endsWith(`: ${DEFAULT_BOOTSTRAP_ADMIN_EMAIL}`))).toEqual([]);
  });

  it('when the README configuration table is compared with the schema, then they are identical (else run node scripts/config-table.ts --write)', () => {
    const section = readmeSection(readFileSync(README_URL, 'utf8'));
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
});
