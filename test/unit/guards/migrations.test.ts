import { checkMigrationsFolder, migrationProblems } from '../../../scripts/guards/migrations.ts';

const KNEX_ONLY = "import type { Knex } from 'knex';\nimport { createHash } from 'node:crypto';\n";

describe('scripts/guards/migrations: numbering and imports of database migrations', () => {
  it("when the project's migrations folder is checked, then it follows the rules", () => {
    expect(checkMigrationsFolder()).toEqual([]);
  });

  it('when a new migration reuses a number, then the check names both files', () => {
    const files = new Map([
      ['010_key_deletion.ts', KNEX_ONLY],
      ['010_other.ts', KNEX_ONLY],
    ]);
    expect(migrationProblems(files)).toEqual([
      '010_key_deletion.ts, 010_other.ts share the number 010: give the new migration the next free number',
    ]);
  });

  it('when a third migration takes the number the two deployed 007s share, then it is refused', () => {
    const files = new Map([
      ['007_aws_kms.ts', KNEX_ONLY],
      ['007_master_secrets.ts', KNEX_ONLY],
      ['007_new.ts', KNEX_ONLY],
    ]);
    expect(migrationProblems(files)).toHaveLength(1);
    expect(migrationProblems(new Map([...files].slice(0, 2)))).toEqual([]);
  });

  it('when a migration imports live code, a package or loads a module at run time, then each import is named', () => {
    const text = `${KNEX_ONLY}import { x } from '../../keys/usages.ts';\nexport * from 'pg';\nconst m = await import('../../crypto/registry.ts');\nconst r = require('fs');\n`;
    expect(migrationProblems(new Map([['011_new.ts', text]]))).toEqual([
      "011_new.ts imports '../../keys/usages.ts': a migration imports only knex and node: modules; copy what it needs into it, as it is today",
      "011_new.ts imports 'pg': a migration imports only knex and node: modules; copy what it needs into it, as it is today",
      "011_new.ts imports '../../crypto/registry.ts': a migration imports only knex and node: modules; copy what it needs into it, as it is today",
    ]);
  });

  it('when 009 imports something beyond the three imports it was deployed with, then that import is refused', () => {
    const text = `${KNEX_ONLY}import { allowedUsages } from '../../keys/usages.ts';\nimport { y } from '../../keys/cache.ts';\n`;
    expect(migrationProblems(new Map([['009_key_usages.ts', text]]))).toEqual([
      "009_key_usages.ts imports '../../keys/cache.ts': a migration imports only knex and node: modules; copy what it needs into it, as it is today",
    ]);
  });

  it('when a file in the folder is not named NNN_name.ts, then the check says how to name it', () => {
    expect(
      migrationProblems(
        new Map([
          ['11_x.ts', KNEX_ONLY],
          ['index.ts', ''],
        ]),
      ),
    ).toEqual(['11_x.ts: a migration is named NNN_name.ts (three digits, lower-case name)']);
  });
});
