/**
 * `keyward --version` of the installed CLI answers in under 0.3 s. Packs the CLI
 * (scripts/pack-cli.ts), installs it with `npm install -g --prefix` into a temp directory (as a
 * user would, no registry: its dependencies are bundled), then runs, alternated round by round,
 * a bare start of the Node the installed bin runs on (`node -e 0`, its peer), `keyward --version`
 * and `keyward --help`, BENCH_RUNS times each (default 10), and prints each one's median wall time
 * and the ratio of `--version` to the bare start. The installed bin starts with
 * `#!/usr/bin/env node`: the first `node` on PATH, which this script reports.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { printResult } from './lib/result.ts';

const runs = Number(process.env.BENCH_RUNS ?? 10);
const root = new URL('..', import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), 'keyward-cli-bench-'));

/** Wall seconds of one run; throws when it fails or writes to stderr. */
function timed(cmd: string, args: string[]): number {
  const t0 = process.hrtime.bigint();
  const r = spawnSync(cmd, args, { encoding: 'utf8', cwd: dir });
  const s = Number(process.hrtime.bigint() - t0) / 1e9;
  if (r.status !== 0 || r.stderr !== '')
    throw new Error(`${cmd} ${args.join(' ')}: exit ${r.status}, stderr ${r.stderr}`);
  return s;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

try {
  const tgz = execFileSync(process.execPath, [join(root, 'scripts/pack-cli.ts'), '--out', dir], {
    encoding: 'utf8',
    cwd: dir,
  })
    .trim()
    .split('\n')
    .pop()!;
  const prefix = join(dir, 'prefix');
  execFileSync(
    'npm',
    ['install', '-g', '--prefix', prefix, '--offline', '--no-audit', '--no-fund', join(dir, tgz)],
    { cwd: dir, stdio: 'ignore' },
  );
  const bin = join(prefix, 'bin', 'keyward');
  const node = execFileSync('sh', ['-c', 'command -v node'], { encoding: 'utf8' }).trim();
  const nodeVersion = execFileSync(node, ['--version'], { encoding: 'utf8' }).trim();
  const cases: Array<[string, string, string[]]> = [
    ['node -e 0', node, ['-e', '0']],
    ['keyward --version', bin, ['--version']],
    ['keyward --help', bin, ['--help']],
  ];
  const times = new Map<string, number[]>(cases.map(([name]) => [name, []]));
  timed(bin, ['--version']); // the first run reads the files from disk
  for (let i = 0; i < runs; i++)
    for (const [name, cmd, args] of i % 2 ? [...cases].reverse() : cases)
      times.get(name)!.push(timed(cmd, args));
  const medians = new Map([...times].map(([name, xs]) => [name, median(xs)]));
  console.log(`installed bin runs on ${node} (${nodeVersion}); ${runs} runs each, alternated`);
  for (const [name, m] of medians) console.log(`${name}: median ${m.toFixed(3)} s`);
  const version = medians.get('keyward --version')!;
  const bare = medians.get('node -e 0')!;
  console.log(
    `keyward --version / node -e 0: ${(version / bare).toFixed(2)} (target: under 0.3 s)`,
  );
  printResult({
    name: 'cli-version-startup',
    metric: 'installed `keyward --version`, median wall time',
    value: Number(version.toFixed(3)),
    baseline: 'bare `node -e 0` of the same Node, same run',
    baselineValue: Number(bare.toFixed(3)),
    ratio: Number((version / bare).toFixed(2)),
    unit: 's',
    target: { op: '<', value: 0.3, of: 'value', issue: 27 },
    notes: `${nodeVersion}, ${runs} runs alternated; --help median ${medians.get('keyward --help')!.toFixed(3)} s`,
  });
} finally {
  rmSync(dir, { recursive: true, force: true });
}
