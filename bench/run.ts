/**
 * `npm run bench [-- filter ...]`: runs every bench/*.bench.ts (or those whose name contains a
 * filter) one after another, each in its own Node process so no figure disturbs the next. Each
 * script prints human lines and one `RESULT {json}` line per figure; the runner gathers them into
 * bench/results/latest.json.tmp and latest.md.tmp (ignored by git), or, with `--record`, into the
 * committed bench/results/latest.json and latest.md (conventions rule 16: a bench run rewrites
 * committed results only when asked). Exits 1 when a script fails.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { parseResults, type BenchResult } from './lib/result.ts';
import { chooseTool } from './lib/load.ts';

interface Outcome {
  script: string;
  ok: boolean;
  exitCode: number | null;
  seconds: number;
  results: BenchResult[];
}

const benchDir = new URL('.', import.meta.url).pathname;
const resultsDir = join(benchDir, 'results');
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

const fmt = (n: number) => (Number.isInteger(n) ? n.toLocaleString('en') : String(n));

function markdown(outcomes: Outcome[], meta: Record<string, string>): string {
  const lines = [
    `# Benchmark results`,
    '',
    Object.entries(meta)
      .map(([k, v]) => `- ${k}: ${v}`)
      .join('\n'),
    '',
    '| benchmark | metric | value | baseline | baseline value | ratio | notes |',
    '|---|---|---:|---|---:|---:|---|',
    ...outcomes.flatMap(({ script, ok, exitCode, results }) =>
      ok
        ? results.map(
            (r) =>
              `| ${r.name} | ${r.metric} | ${fmt(r.value)} ${r.unit} | ${r.baseline} | ${fmt(r.baselineValue)} ${r.unit} | ${r.ratio} | ${r.notes} |`,
          )
        : [`| ${script} | failed (exit ${exitCode}) | | | | | |`],
    ),
  ];
  return `${lines.join('\n')}\n`;
}

const scripts = readdirSync(benchDir)
  .filter((f) => f.endsWith('.bench.ts'))
  .filter((f) => filters.length === 0 || filters.some((flt) => f.includes(flt)))
  .sort();
if (scripts.length === 0) {
  console.error(`no bench/*.bench.ts matches ${filters.join(', ')}`);
  process.exit(1);
}

const meta = {
  date: new Date().toISOString(),
  node: process.version,
  cpu: `${cpus().length} x ${cpus()[0]?.model ?? 'unknown'}`,
  load: chooseTool(),
};
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
process.exit(outcomes.every((o) => o.ok) ? 0 : 1);
