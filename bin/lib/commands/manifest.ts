/**
 * `keyward verify-manifest <manifest.jws> --jwks <file|url> --report <rows.jsonl> [--outputs <dir>]`:
 * the offline check of a migration's signed manifest (docs/manifest.md), with no login and no
 * call to the service: the signature with the tenant's JWK Set, the report's rows against the
 * signed Merkle root and each row's inclusion proof, and each output's size and SHA-256 against
 * its row. Exit 0 when everything matches, 4 with the list of what differs.
 */
import { createReadStream, readFileSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import type { JsonWebKey } from 'node:crypto';
import { folderTree, verifyManifest } from '../../../shared/manifest/verify.ts';
import { EXIT, UsageError, print, str, table, type Command } from '../command.ts';

/** Largest JWK Set read, from a file or a URL. */
const MAX_JWKS = 1 << 20;
/** How long a JWK Set URL may take to answer. */
const JWKS_TIMEOUT_MS = 10_000;

async function readJwks(where: string): Promise<{ keys: JsonWebKey[] }> {
  let text: string;
  if (/^https?:\/\//i.test(where)) {
    const res = await fetch(where, {
      signal: AbortSignal.timeout(JWKS_TIMEOUT_MS),
      headers: { accept: 'application/jwk-set+json, application/json' },
    });
    if (!res.ok) throw new UsageError(`the JWK Set URL answered ${res.status}`);
    const chunks: Buffer[] = [];
    let n = 0;
    for await (const c of res.body ?? []) {
      n += (c as Uint8Array).length;
      if (n > MAX_JWKS) throw new UsageError(`the JWK Set is larger than ${MAX_JWKS} bytes`);
      chunks.push(Buffer.from(c as Uint8Array));
    }
    text = Buffer.concat(chunks).toString('utf8');
  } else {
    if ((await stat(where)).size > MAX_JWKS)
      throw new UsageError(`the JWK Set is larger than ${MAX_JWKS} bytes`);
    text = readFileSync(where, 'utf8');
  }
  let jwks: unknown;
  try {
    jwks = JSON.parse(text);
  } catch {
    throw new UsageError('the JWK Set is not JSON');
  }
  const keys = (jwks as { keys?: unknown })?.keys;
  if (!Array.isArray(keys))
    throw new UsageError('the JWK Set has no keys array (RFC 7517 section 5)');
  return { keys: keys as JsonWebKey[] };
}

export const verifyManifestCommand: Command = {
  name: 'verify-manifest',
  summary:
    "Check a migration's signed manifest offline: signature, every row's proof, every output's digest",
  args: ['<manifest.jws>'],
  local: true,
  details: [
    'The report is what `keyward migrate report ID` prints as JSON Lines; when its lines carry',
    'their inclusion proofs, an edited, added or removed row is named, not only detected. --outputs is a',
    'local copy of the output prefix (its keys relative to the prefix). Exit 0 when everything',
    'matches; 4 with one line per changed, missing or added output and edited, added or removed row.',
    'See docs/manifest.md for the same check in a few lines of Python or JavaScript.',
  ].join('\n'),
  options: {
    jwks: {
      type: 'string',
      value: '<file | https://...>',
      help: "the tenant's public keys as a JWK Set (`keyward keys public <kid> --format jwks`)",
    },
    report: {
      type: 'string',
      value: '<rows.jsonl | ->',
      help: 'the migration report, one ledger row a line (- for stdin)',
    },
    outputs: {
      type: 'string',
      value: '<dir>',
      help: 'a folder holding the output prefix: each output is sized and hashed, extra files named',
    },
  },
  async run(inv) {
    const jwksAt = str(inv.values, 'jwks');
    const reportAt = str(inv.values, 'report');
    if (!jwksAt) throw new UsageError('--jwks is required');
    if (!reportAt) throw new UsageError('--report is required');
    const outputsAt = str(inv.values, 'outputs');
    if (outputsAt !== undefined && !(await stat(outputsAt)).isDirectory())
      throw new UsageError(`--outputs ${outputsAt} is not a folder`);
    const jws = readFileSync(inv.args[0], 'utf8');
    const report = reportAt === '-' ? process.stdin : createReadStream(reportAt);
    const result = await verifyManifest({
      jws,
      jwks: await readJwks(jwksAt),
      report: report as AsyncIterable<Buffer>,
      outputs: outputsAt === undefined ? undefined : folderTree(outputsAt),
    });
    print(inv, result, () => {
      const p = result.payload;
      const head = p
        ? `manifest of migration ${p.migration} (tenant ${p.tenant}), signed by ${p.kid}: ${p.tree.size} rows, root ${p.tree.root}\n` +
          `checked ${result.rows} rows and ${result.outputs} outputs${outputsAt === undefined ? ' (rows only: no --outputs)' : ''}\n`
        : '';
      if (result.ok) return `${head}ok: the signature, every row and every output match\n`;
      const more = result.omitted ? `... and ${result.omitted} more\n` : '';
      return `${head}${table(result.findings, [
        ['finding', (f) => f.kind],
        ['name', (f) => f.name],
        ['detail', (f) => f.detail],
      ])}${more}`;
    });
    return result.ok ? EXIT.ok : EXIT.invalid;
  },
};
