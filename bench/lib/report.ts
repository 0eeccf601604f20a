/**
 * What bench/run.ts writes from a run's outcomes: the markdown table of every figure with its
 * target and whether it is met (bench/results/latest.md), and the copy of that table in
 * docs/benchmarks.md (the README links to it), which lives between two markers there and is
 * replaced by `--record`. The functions keep their readme names from when the README held it.
 */
import { describeTarget, metText, type BenchResult } from './result.ts';

/** One script's run. */
export interface Outcome {
  script: string;
  ok: boolean;
  exitCode: number | null;
  seconds: number;
  results: BenchResult[];
}

/** The run as a whole: where and when, the machine's load average (1, 5, 15 min) at start and end. */
export interface RunMeta {
  date: string;
  node: string;
  cpu: string;
  load: string;
  loadAtStart: number[];
  loadAtEnd: number[];
  seconds: number;
}

export const README_START = '<!-- bench:results:start -->';
export const README_END = '<!-- bench:results:end -->';

const number = (n: number) =>
  typeof n !== 'number' || !Number.isFinite(n)
    ? String(n)
    : Number.isInteger(n)
      ? n.toLocaleString('en')
      : String(n);
const cell = (s: string) => s.replaceAll('|', '\\|').replaceAll('\n', ' ');
const loads = (l: number[]) => l.map((x) => x.toFixed(2)).join(' ');

/** The line above the table: the run's date, machine, load average at start and end, duration. */
export function runLine(meta: RunMeta): string {
  const minutes = Math.floor(meta.seconds / 60);
  const duration = `${minutes} min ${Math.round(meta.seconds - minutes * 60)} s`;
  return `Run of ${meta.date} on ${meta.cpu}, Node ${meta.node}, load generator ${meta.load}; load average ${loads(meta.loadAtStart)} at the start, ${loads(meta.loadAtEnd)} at the end; ${duration} in all.`;
}

/** One row per figure, with its target and `met` / `NOT met` / `reported only`; a failed script is a `failed` row after any figures it printed. */
export function resultsTable(outcomes: Outcome[]): string {
  const rows = outcomes.flatMap(({ script, ok, exitCode, results }) => [
    ...results.map(
      (r) =>
        `| ${cell(r.name)} | ${cell(r.metric)} | ${number(r.value)} ${r.unit} | ${cell(r.baseline)} | ${number(r.baselineValue)} ${r.unit} | ${number(r.ratio)} | ${describeTarget(r)} | ${metText(r)} | ${cell(r.notes)} |`,
    ),
    ...(ok
      ? []
      : [
          `| ${script} | failed (exit ${exitCode}${results.length > 0 ? '' : ', no RESULT line'}) | | | | | | failed | |`,
        ]),
  ]);
  return [
    '| benchmark | metric | value | baseline | baseline value | ratio | target | met | notes |',
    '|---|---|---:|---|---:|---:|---|---|---|',
    ...rows,
  ].join('\n');
}

/** bench/results/latest.md. */
export function markdown(outcomes: Outcome[], meta: RunMeta): string {
  return `# Benchmark results\n\n${runLine(meta)}\n\n${resultsTable(outcomes)}\n`;
}

/** Replaces what lies between the document's markers with `block`; throws unless each marker is there once, start first. */
export function replaceReadmeBlock(readme: string, block: string): string {
  const start = readme.indexOf(README_START);
  const end = readme.indexOf(README_END);
  if (start < 0 || end < 0)
    throw new Error(`docs/benchmarks.md has no ${start < 0 ? README_START : README_END} marker`);
  if (
    end < start ||
    readme.indexOf(README_START, start + 1) >= 0 ||
    readme.indexOf(README_END, end + 1) >= 0
  )
    throw new Error(`docs/benchmarks.md must hold ${README_START} once, then ${README_END} once`);
  return `${readme.slice(0, start + README_START.length)}\n${block.trim()}\n${readme.slice(end)}`;
}

/** What goes between the markers of docs/benchmarks.md. */
export function readmeBlock(outcomes: Outcome[], meta: RunMeta): string {
  return `${runLine(meta)}\n\n${resultsTable(outcomes)}`;
}
