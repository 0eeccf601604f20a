/**
 * npm run pack:cli: the CLI as a package that installs like a tool, outside the checkout:
 *   npm run pack:cli            # writes keyward-<version>.tgz here (or --out DIR) and prints its path
 *   npm install -g ./keyward-<version>.tgz
 * The package holds bin/keyward.js, the CLI compiled to JavaScript (tsconfig.cli.json: Node
 * strips no types under node_modules, and compiled code starts without the type stripper), and
 * the few npm packages it imports, bundled, so installing needs no registry. It runs on Node 20
 * or later; the service itself needs Node 24.
 */
import { execFileSync } from 'node:child_process';
import {
  cpSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';

const root = resolve(import.meta.dirname, '..');
const { values } = parseArgs({ options: { out: { type: 'string' } } });
const outDir = resolve(values.out ?? root);
const project = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  version: string;
  license: string;
  dependencies: Record<string, string>;
};

const stage = mkdtempSync(join(tmpdir(), 'keyward-cli-pack-'));
try {
  const tsc = join(root, 'node_modules/typescript/bin/tsc');
  execFileSync(
    process.execPath,
    [tsc, '-p', join(root, 'tsconfig.cli.json'), '--outDir', join(stage, 'dist')],
    {
      stdio: 'inherit',
    },
  );
  mkdirSync(join(stage, 'bin'));
  cpSync(join(root, 'bin/keyward.js'), join(stage, 'bin/keyward.js'));

  const files = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
      e.isDirectory() ? files(join(dir, e.name)) : [join(dir, e.name)],
    );
  // Files the compiled code reads beside itself (the KMS plugin's vendored api.proto): tsc copies
  // only what it compiles.
  for (const file of files(join(root, 'bin')).filter((f) => f.endsWith('.proto')))
    cpSync(file, join(stage, 'dist', relative(root, file)));

  // The npm packages the compiled code imports, and theirs: bundled (bundleDependencies).
  const direct = new Set<string>();
  for (const file of files(join(stage, 'dist'))) {
    for (const m of readFileSync(file, 'utf8').matchAll(
      /\bfrom\s+'([^'.][^']*)'|import\('([^'.][^']*)'\)/g,
    )) {
      const spec = m[1] ?? m[2];
      if (spec.startsWith('node:')) continue;
      direct.add(spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]);
    }
  }
  const bundled = new Set<string>();
  const visit = (name: string) => {
    if (bundled.has(name)) return;
    bundled.add(name);
    const pkg = JSON.parse(readFileSync(join(root, 'node_modules', name, 'package.json'), 'utf8'));
    for (const dep of Object.keys(pkg.dependencies ?? {})) visit(dep);
  };
  for (const name of direct) visit(name);
  for (const name of bundled)
    cpSync(join(root, 'node_modules', name), join(stage, 'node_modules', name), {
      recursive: true,
      dereference: true,
    });

  const dependencies = Object.fromEntries(
    [...direct].sort().map((name) => [name, project.dependencies[name] ?? '*']),
  );
  writeFileSync(
    join(stage, 'package.json'),
    `${JSON.stringify(
      {
        name: 'keyward',
        version: project.version,
        description:
          'The keyward command line: key management and cryptography through a Keyward service',
        type: 'module',
        license: project.license,
        bin: { keyward: './bin/keyward.js' },
        engines: { node: '>=20' },
        files: ['bin/', 'dist/'],
        dependencies,
        bundleDependencies: Object.keys(dependencies),
      },
      null,
      2,
    )}\n`,
  );
  mkdirSync(outDir, { recursive: true });
  const name = execFileSync('npm', ['pack', '--silent', '--pack-destination', outDir, stage], {
    encoding: 'utf8',
  }).trim();
  const tgz = join(outDir, name.split('\n').pop()!);
  process.stdout.write(`${relative(process.cwd(), tgz) || tgz}\n`);
} finally {
  rmSync(stage, { recursive: true, force: true });
}
