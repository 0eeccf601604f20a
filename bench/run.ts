/**
 * `npm run bench [-- filter ...]`: runs every bench/*.bench.ts (or those whose name contains a
 * filter) one after another, each in its own Node process so no figure disturbs the next. Each
 * script prints human lines and one `RESULT {json}` line per figure, with its target if it has
 * one (bench/lib/result.ts decides whether it is met); the runner gathers them into
 * bench/results/latest.json.tmp and latest.md.tmp (ignored by git), or, with `--record`, into the
 * committed bench/results/latest.json and latest.md (a bench run rewrites
 * committed results only when asked), and a `--record` run of every script also rewrites the
 * table of docs/benchmarks.md between its bench:results markers (bench/lib/report.ts). Exits 1 when a script
 * fails.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { parseResults } from './lib/result.ts';
import { chooseTool } from './lib/load.ts';
import {
  markdown,
  readmeBlock,
  replaceReadmeBlock,
  type Outcome,
  type RunMeta,
} from './lib/report.ts';

const benchDir = new URL('.', import.meta.url).pathname;
const resultsDir = join(benchDir, 'results');
const benchmarksDocPath = join(benchDir, '..', 'docs', 'benchmarks.md');
const record = process.argv.includes('--record');
const filters = process.argv.slice(2).filter((a) => a !== '--record');

function runScript(script: string): Promise<Outcome> {
  const started = performance.now();
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(benchDir, script)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      process.stdout.write(chunk);
    });
    child.once('close', (exitCode) => {
      const results = parseResults(output);
      const seconds = Number(((performance.now() - started) / 1000).toFixed(1));
      resolve({ script, ok: exitCode === 0 && results.length > 0, exitCode, seconds, results });
    });
  });
}

const scripts = readdirSync(benchDir)
  .filter((f) => f.endsWith('.bench.ts'))
  .filter((f) => filters.length === 0 || filters.some((flt) => f.includes(flt)))
  .sort();
if (scripts.length === 0) {
  console.error(`no bench/*.bench.ts matches ${filters.join(', ')}`);
  process.exit(1);
}

const started = performance.now();
const loadAtStart = loadavg();
const date = new Date().toISOString();
const outcomes: Outcome[] = [];
for (const script of scripts) {
  console.log(`\n== ${script}`);
  const outcome = await runScript(script);
  if (!outcome.ok)
    console.error(
      `${script} failed (exit ${outcome.exitCode}${outcome.results.length > 0 ? '' : ', no RESULT line'})`,
    );
  outcomes.push(outcome);
}
const meta: RunMeta = {
  date,
  node: process.version,
  cpu: `${cpus().length} x ${cpus()[0]?.model ?? 'unknown'}`,
  load: chooseTool(),
  loadAtStart,
  loadAtEnd: loadavg(),
  seconds: Math.round((performance.now() - started) / 1000),
};

mkdirSync(resultsDir, { recursive: true });
const suffix = record ? '' : '.tmp';
writeFileSync(
  join(resultsDir, `latest.json${suffix}`),
  `${JSON.stringify({ ...meta, results: outcomes }, null, 2)}\n`,
);
writeFileSync(join(resultsDir, `latest.md${suffix}`), markdown(outcomes, meta));
console.log(
  `\nwrote bench/results/latest.json${suffix} and bench/results/latest.md${suffix}${record ? '' : ' (--record writes the committed files)'}`,
);
if (record && filters.length === 0) {
  writeFileSync(
    benchmarksDocPath,
    replaceReadmeBlock(readFileSync(benchmarksDocPath, 'utf8'), readmeBlock(outcomes, meta)),
  );
  console.log('rewrote the benchmark table in docs/benchmarks.md');
} else if (record)
  console.log('docs/benchmarks.md left as it is: only a run of every script rewrites its table');
process.exit(outcomes.every((o) => o.ok) ? 0 : 1);
