/**
 * The rules for database migrations, checked without running anything: each file is
 * `NNN_name.ts` with a number no other migration has, and imports only `knex` and Node's built-in
 * modules. A migration runs years after it was written, on databases that recorded its name: code
 * it imports from the live service changes under it, so it would no longer do what it did on the
 * databases that already ran it. Names are never changed for the same reason, so the exceptions
 * that predate this check are listed here by name, with why. `node scripts/guards/migrations.ts`
 * prints the problems; test/unit/guards/migrations.test.ts runs it on the project's folder.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

/** The project's migrations folder. */
export const MIGRATIONS_DIR = fileURLToPath(
  new URL('../../shared/db/migrations/', import.meta.url),
);

/** A migration's file name: a three-digit number, an underscore, a lower-case name. */
const MIGRATION_FILE = /^(\d{3})_[a-z0-9_]+\.ts$/;

/**
 * Migrations that share a number, allowed by file name. Both were deployed under these names
 * (knex_migrations records them), so renaming either would make knex see an unknown migration and
 * run the renamed one again. The list in index.ts gives their order.
 */
export const SHARED_NUMBERS: ReadonlySet<string> = new Set([
  '007_aws_kms.ts',
  '007_master_secrets.ts',
]);

/**
 * Imports beyond knex and Node allowed per migration, by file name and specifier. 009 reads each
 * imported key's certificate again to record the usages it allows: that takes the certificate
 * parser (shared/keystore/certificate.ts, on @peculiar/asn1-x509), the key type table and the
 * usage rule. A copy of the parser inside the migration would accept or refuse certificates
 * differently from the one that ran on deployed databases, which is what the snapshot would be
 * for; the three imports stay, and no other migration may add one.
 */
export const ALLOWED_IMPORTS: ReadonlyMap<string, ReadonlySet<string>> = new Map([
  [
    '009_key_usages.ts',
    new Set(['../../keystore/certificate.ts', '../../crypto/registry.ts', '../../keys/usages.ts']),
  ],
]);

const BUILTINS = new Set(builtinModules);

/** Whether a specifier is knex or a Node built-in module. */
function isAllowedEverywhere(specifier: string): boolean {
  return specifier === 'knex' || specifier.startsWith('node:') || BUILTINS.has(specifier);
}

/** Every module specifier a file's text names: imports, re-exports, `import()` and `require()`. */
export function specifiersOf(fileName: string, text: string): string[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, false);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (
      (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      found.push(node.moduleSpecifier.text);
    } else if (
      ts.isCallExpression(node) &&
      (node.expression.kind === ts.SyntaxKind.ImportKeyword ||
        (ts.isIdentifier(node.expression) && node.expression.text === 'require'))
    ) {
      const [arg] = node.arguments;
      found.push(arg && ts.isStringLiteralLike(arg) ? arg.text : '(computed specifier)');
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** The problems of a migrations folder given as file name to text; empty when it follows the rules. */
export function migrationProblems(files: ReadonlyMap<string, string>): string[] {
  const problems: string[] = [];
  const byNumber = new Map<string, string[]>();
  for (const name of [...files.keys()].sort()) {
    if (name === 'index.ts') continue;
    const match = MIGRATION_FILE.exec(name);
    if (!match) {
      problems.push(`${name}: a migration is named NNN_name.ts (three digits, lower-case name)`);
      continue;
    }
    byNumber.set(match[1], [...(byNumber.get(match[1]) ?? []), name]);
    const allowed = ALLOWED_IMPORTS.get(name);
    for (const specifier of specifiersOf(name, files.get(name) ?? '')) {
      if (isAllowedEverywhere(specifier) || allowed?.has(specifier)) continue;
      problems.push(
        `${name} imports '${specifier}': a migration imports only knex and node: modules; copy what it needs into it, as it is today`,
      );
    }
  }
  for (const [number, names] of byNumber) {
    if (names.length < 2 || names.every((n) => SHARED_NUMBERS.has(n))) continue;
    problems.push(
      `${names.join(', ')} share the number ${number}: give the new migration the next free number`,
    );
  }
  return problems;
}

/** The problems of the project's migrations folder. */
export function checkMigrationsFolder(dir = MIGRATIONS_DIR): string[] {
  const files = new Map<string, string>();
  for (const name of readdirSync(dir)) {
    if (name.endsWith('.ts')) files.set(name, readFileSync(join(dir, name), 'utf8'));
  }
  return migrationProblems(files);
}

if (import.meta.main) {
  const problems = checkMigrationsFolder();
  for (const p of problems) process.stderr.write(`${p}\n`);
  process.stdout.write(problems.length === 0 ? 'migrations follow the rules\n' : '');
  process.exitCode = problems.length === 0 ? 0 : 1;
}
