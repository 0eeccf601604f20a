/**
 * Reading a migration's ledger: its rows in source-key order (what the manifest is built from)
 * and the report, one line per object as JSON Lines or CSV, streamed page by page.
 */
import type { Knex } from 'knex';
import { type LedgerRow } from '../../../shared/migrations/index.ts';
import { ledgerRowsInOrder } from '../../../shared/migrations/ledger.ts';

export { ledgerRowsInOrder };
export type { LedgerRow };

/** A report line's fields, in the CSV's column order. */
export const REPORT_COLUMNS = [
  'sourceKey',
  'outcome',
  'problem',
  'detail',
  'inputSize',
  'inputSha256',
  'form',
  'outputs',
  'keys',
  'signers',
  'attempts',
  'worker',
  'startedAt',
  'finishedAt',
] as const;

/** One object of the report (the lease columns are the workers' business, not the report's). */
export function reportLine(r: LedgerRow): Record<(typeof REPORT_COLUMNS)[number], unknown> {
  return {
    sourceKey: r.sourceKey,
    outcome: r.outcome ?? 'pending',
    problem: r.problem,
    detail: r.detail,
    inputSize: r.inputSize,
    inputSha256: r.inputSha256,
    form: r.form,
    outputs: r.outputs,
    keys: r.keys,
    signers: r.signers,
    attempts: r.attempts,
    worker: r.worker,
    startedAt: r.startedAt?.toISOString() ?? null,
    finishedAt: r.finishedAt?.toISOString() ?? null,
  };
}

/** RFC 4180 field: quoted when it holds a comma, a quote or a line break; JSON for structures. */
function csvField(v: unknown): string {
  const s =
    v === null || v === undefined ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v);
  return /[",\r\n]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
}

/** The report as text chunks, one per ledger page: JSON Lines, or CSV with a header line. */
export async function* reportLines(
  db: Knex,
  migrationId: string,
  format: 'jsonl' | 'csv',
): AsyncGenerator<string> {
  if (format === 'csv') yield `${REPORT_COLUMNS.join(',')}\r\n`;
  let buffered = '';
  let n = 0;
  for await (const row of ledgerRowsInOrder(db, migrationId)) {
    const line = reportLine(row);
    buffered +=
      format === 'csv'
        ? `${REPORT_COLUMNS.map((c) => csvField(line[c])).join(',')}\r\n`
        : `${JSON.stringify(line)}\n`;
    if (++n % 500 === 0) {
      yield buffered;
      buffered = '';
    }
  }
  if (buffered) yield buffered;
}
