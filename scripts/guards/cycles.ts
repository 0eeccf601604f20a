/**
 * Circular-import check, as BullMQ runs `madge --circular` before its tests: prints every cycle
 * in the project's import graph and exits 1 when there is one. `import type` edges count too
 * (a type cycle is still two modules that cannot be read apart); `--runtime` leaves them out to
 * show only the cycles that change load order.
 *
 *   node scripts/guards/cycles.ts [--runtime] [root]
 */
import { resolve } from 'node:path';
import { importGraph, SOURCE_FOLDERS } from './imports.ts';

/** Options of {@link findCycles}. */
export interface CycleOptions {
  /** Leave out `import type` / `export type` edges, which Node erases before loading. */
  runtimeOnly?: boolean;
  /** Folders of root to read (default: every source folder). */
  folders?: readonly string[];
}

/**
 * The cycles of root's import graph, each as the list of files in import order (the first file
 * imports the second, ..., the last imports the first), starting at its smallest path. One cycle
 * per back edge of a depth-first walk in sorted order, so the output is stable and its size
 * bounded by the number of imports.
 */
export function findCycles(root: string, options: CycleOptions = {}): string[][] {
  const graph = importGraph(root, options.folders ?? SOURCE_FOLDERS);
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const cycles: string[][] = [];
  const seen = new Set<string>();

  const visit = (file: string): void => {
    state.set(file, 'open');
    stack.push(file);
    const edges = graph.get(file) ?? new Map<string, boolean>();
    for (const [target, typeOnly] of [...edges].sort(([a], [b]) => a.localeCompare(b))) {
      if (typeOnly && options.runtimeOnly) continue;
      if (!graph.has(target)) continue; // outside the folders read, or a missing file tsc reports
      const mark = state.get(target);
      if (mark === 'open') {
        const cycle = canonical(stack.slice(stack.indexOf(target)));
        const key = cycle.join(' ');
        if (!seen.has(key)) {
          seen.add(key);
          cycles.push(cycle);
        }
      } else if (mark === undefined) {
        visit(target);
      }
    }
    stack.pop();
    state.set(file, 'done');
  };

  for (const file of [...graph.keys()].sort()) if (!state.has(file)) visit(file);
  return cycles;
}

/** A cycle rotated to start at its smallest file, so one cycle found from two places is one. */
function canonical(cycle: string[]): string[] {
  const start = cycle.indexOf([...cycle].sort()[0]);
  return [...cycle.slice(start), ...cycle.slice(0, start)];
}

/** The report printed for a list of cycles. */
export function formatCycles(cycles: string[][]): string {
  if (cycles.length === 0) return 'no circular imports\n';
  const lines = cycles.map((cycle, i) => `${i + 1}) ${[...cycle, cycle[0]].join(' > ')}`);
  return `${cycles.length} circular import${cycles.length === 1 ? '' : 's'}:\n${lines.join('\n')}\n`;
}

if (import.meta.main) {
  const args = process.argv.slice(2);
  const root = resolve(args.find((arg) => !arg.startsWith('--')) ?? '.');
  const cycles = findCycles(root, { runtimeOnly: args.includes('--runtime') });
  process.stdout.write(formatCycles(cycles));
  process.exitCode = cycles.length > 0 ? 1 : 0;
}
