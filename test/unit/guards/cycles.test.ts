import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { findCycles, formatCycles } from '../../../scripts/guards/cycles.ts';

const SCRIPT = fileURLToPath(new URL('../../../scripts/guards/cycles.ts', import.meta.url));

/** Writes a tiny project of the given files (path -> text) into a fresh temp dir. */
function project(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'keyward-cycles-'));
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
}

describe('scripts/guards/cycles: the circular-import check', () => {
  const roots: string[] = [];
  const make = (files: Record<string, string>): string => {
    const root = project(files);
    roots.push(root);
    return root;
  };
  afterAll(() => roots.forEach((root) => rmSync(root, { recursive: true, force: true })));

  it('when the imports form a tree, then there is no cycle and the CLI exits 0', () => {
    const root = make({
      'shared/a.ts':
        "import { b } from './b.ts';\nimport { readFileSync } from 'node:fs';\nexport const a = b;\n",
      'shared/b.ts': "export { c as b } from './sub/c.ts';\n",
      'shared/sub/c.ts': 'export const c = 1;\n',
    });
    expect(findCycles(root)).toEqual([]);
    const run = spawnSync(process.execPath, [SCRIPT, root], { encoding: 'utf8' });
    expect(run.stdout).toBe('no circular imports\n');
    expect(run.status).toBe(0);
  });

  it('when two files import each other through a third, then the cycle is printed once, in import order, and the CLI exits 1', () => {
    const root = make({
      'api/x.ts': "import { y } from './y.ts';\nexport const x = () => y;\n",
      'api/y.ts': "import { z } from '../shared/z.ts';\nexport const y = z;\n",
      'shared/z.ts': "import { x } from '../api/x.ts';\nexport const z = x;\n",
      'api/w.ts': "import { y } from './y.ts';\nexport const w = y;\n",
    });
    expect(findCycles(root)).toEqual([['api/x.ts', 'api/y.ts', 'shared/z.ts']]);
    const run = spawnSync(process.execPath, [SCRIPT, root], { encoding: 'utf8' });
    expect(run.stdout).toBe(
      '1 circular import:\n1) api/x.ts > api/y.ts > shared/z.ts > api/x.ts\n',
    );
    expect(run.status).toBe(1);
  });

  it('when a cycle closes only through an import type, then it counts, and --runtime leaves it out', () => {
    const root = make({
      'shared/a.ts':
        "import type { B } from './b.ts';\nexport type A = { b?: B };\nexport const a = 1;\n",
      'shared/b.ts': "import { a } from './a.ts';\nexport type B = typeof a;\n",
    });
    expect(findCycles(root)).toEqual([['shared/a.ts', 'shared/b.ts']]);
    expect(findCycles(root, { runtimeOnly: true })).toEqual([]);
    expect(
      spawnSync(process.execPath, [SCRIPT, '--runtime', root], { encoding: 'utf8' }).status,
    ).toBe(0);
  });

  it('when a module imports itself or a cycle goes through a dynamic import, then only the static self-import is a cycle', () => {
    const root = make({
      'workers/self.ts': "export * from './self.ts';\n",
      'workers/lazy-a.ts': "import { b } from './lazy-b.ts';\nexport const a = b;\n",
      'workers/lazy-b.ts': "export const b = async () => (await import('./lazy-a.ts')).a;\n",
    });
    expect(findCycles(root)).toEqual([['workers/self.ts']]);
    expect(formatCycles(findCycles(root))).toBe(
      '1 circular import:\n1) workers/self.ts > workers/self.ts\n',
    );
  });
});
