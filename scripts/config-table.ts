/**
 * Prints the configuration table of docs/configuration.md, generated from the one config schema.
 * `node scripts/config-table.ts` prints it; `--write` replaces that file's section between the
 * `<!-- config:start -->` and `<!-- config:end -->` markers. test/unit/readme.test.ts fails when
 * the document and the schema disagree.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { configTable } from '../shared/config/index.ts';

export const START_MARKER = '<!-- config:start -->';
export const END_MARKER = '<!-- config:end -->';
/** The document that holds the table (the README links to it). */
export const CONFIG_DOC_URL = new URL('../docs/configuration.md', import.meta.url);

/** The table as docs/configuration.md holds it (machine-computed defaults are named by the schema's defaultDoc). */
export function readmeConfigTable(): string {
  return configTable();
}

/** The document's text between the markers, without the surrounding blank lines. */
export function readmeSection(readme: string): string | null {
  const start = readme.indexOf(START_MARKER);
  const end = readme.indexOf(END_MARKER);
  if (start < 0 || end < start) return null;
  return readme.slice(start + START_MARKER.length, end).trim();
}

/** The document with its section replaced by the current table. */
export function withTable(readme: string): string {
  const start = readme.indexOf(START_MARKER);
  const end = readme.indexOf(END_MARKER);
  if (start < 0 || end < start)
    throw new Error(`docs/configuration.md lacks the ${START_MARKER} / ${END_MARKER} markers`);
  return `${readme.slice(0, start + START_MARKER.length)}\n${readmeConfigTable()}\n${readme.slice(end)}`;
}

if (import.meta.main) {
  if (process.argv.includes('--write')) {
    writeFileSync(CONFIG_DOC_URL, withTable(readFileSync(CONFIG_DOC_URL, 'utf8')));
    process.stdout.write('docs/configuration.md configuration table updated\n');
  } else {
    process.stdout.write(`${readmeConfigTable()}\n`);
  }
}
