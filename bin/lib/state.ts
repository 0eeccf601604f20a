/**
 * The state file a migration keeps in its output directory, so a run that was interrupted
 * (Ctrl-C, a crash, a lost connection) and started again skips finished files and picks up the
 * jobs already submitted; and the summary it writes at the end (JSON and a readable table).
 */
import { existsSync, readFileSync } from 'node:fs';
import { writeWhole } from './files.ts';
import { join } from 'node:path';
import { formatBytes, formatDuration } from './progress.ts';

export const STATE_FILE = '.keyward-migrate-state.json';
export const SUMMARY_JSON = 'keyward-migrate-summary.json';
export const SUMMARY_TEXT = 'keyward-migrate-summary.txt';

/** What is known of one input file. */
export interface FileState {
  size: number;
  mtimeMs: number;
  status: 'uploaded' | 'submitted' | 'converted' | 'failed';
  remoteKey?: string;
  jobId?: string;
  /** Result object key in storage, and where it was downloaded (relative to --out), if it was. */
  outputKey?: string;
  outputFile?: string;
  outputSize?: number;
  problem?: { slug: string; detail: string };
  seconds?: number;
}

export interface MigrationState {
  version: 1;
  url: string;
  source: string;
  batchId?: string;
  /** The migration a folder's run started and had not finished reading (its id). */
  migration?: string;
  files: Record<string, FileState>;
}

/** Loads the state of an earlier run of the same source, or a fresh one. */
export function loadState(outDir: string | null, url: string, source: string): MigrationState {
  const fresh: MigrationState = { version: 1, url, source, files: {} };
  if (!outDir) return fresh;
  const file = join(outDir, STATE_FILE);
  if (!existsSync(file)) return fresh;
  const state = JSON.parse(readFileSync(file, 'utf8')) as MigrationState;
  // Another service or source: job ids and keys of that run mean nothing here.
  return state.version === 1 && state.url === url && state.source === source ? state : fresh;
}

/** Saves the state atomically; at most one write in flight, the latest state wins. */
export class StateWriter {
  readonly state: MigrationState;
  readonly #file: string | null;
  #pending: Promise<void> = Promise.resolve();
  #dirty = false;

  constructor(outDir: string | null, state: MigrationState) {
    this.state = state;
    this.#file = outDir ? join(outDir, STATE_FILE) : null;
  }

  save(): Promise<void> {
    if (!this.#file) return Promise.resolve();
    if (this.#dirty) return this.#pending;
    this.#dirty = true;
    const file = this.#file;
    this.#pending = this.#pending.then(async () => {
      this.#dirty = false;
      await writeWhole(file, JSON.stringify(this.state, null, 1));
    });
    return this.#pending;
  }
}

export interface SummaryRow {
  file: string;
  status: 'converted' | 'failed' | 'skipped';
  inputSize: number;
  output: string | null;
  outputSize: number | null;
  seconds: number | null;
  problem: { slug: string; detail: string } | null;
}

export interface Summary {
  source: string;
  out: string;
  url: string;
  startedAt: string;
  finishedAt: string;
  seconds: number;
  files: number;
  converted: number;
  failed: number;
  skipped: number;
  bytesIn: number;
  bytesOut: number;
  rows: SummaryRow[];
}

/** The readable table: one row per file (the first `limit`), then totals. */
export function summaryTable(s: Summary, limit = Infinity): string {
  const rows = s.rows.slice(0, limit);
  const width = Math.min(60, Math.max(4, ...rows.map((r) => r.file.length)));
  const cut = (t: string) =>
    t.length > width ? `…${t.slice(t.length - width + 1)}` : t.padEnd(width);
  const lines = [
    `${'file'.padEnd(width)}  ${'status'.padEnd(9)}  ${'input'.padStart(9)}  ${'output'.padStart(9)}  ${'time'.padStart(7)}  note`,
  ];
  for (const r of rows) {
    const note = r.problem ? `${r.problem.slug}: ${r.problem.detail}` : (r.output ?? '');
    lines.push(
      `${cut(r.file)}  ${r.status.padEnd(9)}  ${formatBytes(r.inputSize).padStart(9)}  ${(r.outputSize === null ? '-' : formatBytes(r.outputSize)).padStart(9)}  ${(r.seconds === null ? '-' : `${r.seconds.toFixed(1)} s`).padStart(7)}  ${note}`,
    );
  }
  if (s.rows.length > rows.length)
    lines.push(`… ${s.rows.length - rows.length} more rows in ${SUMMARY_TEXT}`);
  const rate = s.seconds > 0 ? `${formatBytes(s.bytesIn / s.seconds)}/s` : '-';
  lines.push(
    '',
    `${s.files} files: ${s.converted} converted, ${s.failed} failed, ${s.skipped} skipped (done in an earlier run) | ${formatBytes(s.bytesIn)} in, ${formatBytes(s.bytesOut)} out in ${formatDuration(s.seconds)} (${rate})`,
  );
  return `${lines.join('\n')}\n`;
}

/** Writes the JSON summary and the table into `outDir`. */
export async function writeSummary(outDir: string, s: Summary): Promise<void> {
  await writeWhole(join(outDir, SUMMARY_JSON), `${JSON.stringify(s, null, 2)}\n`);
  await writeWhole(join(outDir, SUMMARY_TEXT), summaryTable(s));
}
