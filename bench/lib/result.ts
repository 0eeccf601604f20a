/** The machine-readable `RESULT {json}` lines bench scripts print, one per figure, read by bench/run.ts. */

/** One figure, measured against its baseline in the same run. */
export interface BenchResult {
  name: string;
  metric: string;
  value: number;
  baseline: string;
  baselineValue: number;
  /** value / baselineValue. */
  ratio: number;
  unit: string;
  notes: string;
}

const RESULT_PREFIX = 'RESULT ';

/** Prints the final `RESULT {json}` line. */
export function printResult(result: BenchResult): void {
  process.stdout.write(`${RESULT_PREFIX}${JSON.stringify(result)}\n`);
}

/** Reads every RESULT line of a script's output (a script may measure several figures). */
export function parseResults(output: string): BenchResult[] {
  return output
    .split('\n')
    .filter((l) => l.startsWith(RESULT_PREFIX))
    .map((l) => JSON.parse(l.slice(RESULT_PREFIX.length)) as BenchResult);
}
