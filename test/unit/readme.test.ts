import { readFileSync } from 'node:fs';
import { SCHEMA } from '../../shared/config/index.ts';
import { README_URL, readmeConfigTable, readmeSection } from '../../scripts/config-table.ts';

describe('README', () => {
  it('when the README configuration table is compared with the schema, then they are identical (else run node scripts/config-table.ts --write)', () => {
    const section = readmeSection(readFileSync(README_URL, 'utf8'));
    expect(section).not.toBeNull();
    expect(section).toBe(readmeConfigTable());
  });

  it('when the table is rendered, then it has one row per schema variable, in schema order', () => {
    const rows = readmeConfigTable().split('\n').slice(2);
    expect(rows.map((row) => /^\| `([A-Z0-9_]+)` \|/.exec(row)?.[1])).toEqual(Object.values(SCHEMA).map((f) => f.env));
  });
});
