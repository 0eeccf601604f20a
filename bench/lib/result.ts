/** The machine-readable `RESULT {json}` lines bench scripts print, one per figure, read by bench/run.ts. */

/** What a figure must reach: `of` names the field compared (the ratio, or the value in its unit). */
export interface BenchTarget {
  op: '>=' | '<=' | '<' | '>';
  value: number;
  of: 'ratio' | 'value';
  /** The issue that set the target. */
  issue?: number;
}

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
  /** Absent: the figure is reported only. */
  target?: BenchTarget;
  /** Whether the figure reaches its target, computed by printResult and parseResults (targetMet), never written by a script. */
  met?: boolean;
}

const RESULT_PREFIX = 'RESULT ';

/** Whether `result` reaches its target; undefined when it has none (reported only). */
export function targetMet(
  result: Pick<BenchResult, 'value' | 'ratio' | 'target'>,
): boolean | undefined {
  const { target } = result;
  if (!target) return undefined;
  const x = target.of === 'ratio' ? result.ratio : result.value;
  if (typeof x !== 'number' || !Number.isFinite(x)) return false;
  switch (target.op) {
    case '>=':
      return x >= target.value;
    case '<=':
      return x <= target.value;
    case '<':
      return x < target.value;
    case '>':
      return x > target.value;
  }
}

/** The target as a table cell: `ratio >= 0.8`, `< 200 MB`; empty when there is none. */
export function describeTarget(result: Pick<BenchResult, 'unit' | 'target'>): string {
  const { target } = result;
  if (!target) return '';
  const bound =
    target.of === 'ratio'
      ? `ratio ${target.op} ${target.value}`
      : `${target.op} ${target.value.toLocaleString('en')} ${result.unit}`;
  return target.issue === undefined ? bound : `${bound} (issue ${target.issue})`;
}

/** `met`, `NOT met`, or `reported only` for a figure without a target. */
export function metText(result: Pick<BenchResult, 'value' | 'ratio' | 'target'>): string {
  const met = targetMet(result);
  return met === undefined ? 'reported only' : met ? 'met' : 'NOT met';
}

/** Prints the final `RESULT {json}` line, with `met` computed from the target. */
export function printResult(result: Omit<BenchResult, 'met'>): void {
  const met = targetMet(result);
  process.stdout.write(
    `${RESULT_PREFIX}${JSON.stringify(met === undefined ? result : { ...result, met })}\n`,
  );
}

/** Reads every RESULT line of a script's output (a script may measure several figures); `met` is recomputed. */
export function parseResults(output: string): BenchResult[] {
  return output
    .split('\n')
    .filter((l) => l.startsWith(RESULT_PREFIX))
    .map((l) => {
      const { met: _written, ...result } = JSON.parse(l.slice(RESULT_PREFIX.length)) as BenchResult;
      const met = targetMet(result);
      return met === undefined ? result : { ...result, met };
    });
}
