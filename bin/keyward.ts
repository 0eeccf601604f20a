/**
 * The keyward command line (package bin, through bin/keyward.js):
 *   keyward migrate <dir | s3://bucket/prefix> --out <dir | s3://bucket/prefix> [options]
 *   keyward analyze <file>
 * Configuration by flags or environment: --url / KEYWARD_URL, --client-id / KEYWARD_CLIENT_ID,
 * --client-secret / KEYWARD_CLIENT_SECRET (a workload's client_credentials).
 */
import { readFileSync, statSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { ApiError, KeywardClient } from './lib/client.ts';
import { migrate, parseLocation } from './lib/migrate.ts';

const USAGE = `usage:
  keyward migrate <dir | s3://bucket/prefix> --out <dir | s3://bucket/prefix> [options]
  keyward analyze <file>

options:
  --url <url>              service base URL (env KEYWARD_URL)
  --client-id <id>         workload client id (env KEYWARD_CLIENT_ID)
  --client-secret <secret> workload client secret (env KEYWARD_CLIENT_SECRET)
  --concurrency <n>        files in flight at once (default 4)
  --metadata <json>        conversion metadata, e.g. '{"contentEncryption":"A256GCM"}' (default {})
  --metadata-file <file>   the same, from a file
  --remote-prefix <p>      where uploads and results go in your object storage (default migrate/<hash>/)
  --poll <ms>              how often job status is read (default 1000)
  --progress-interval <ms> progress line period when stderr is not a terminal (default 10000)

s3://bucket/prefix names objects the service already holds: its own bucket, under your tenant's
area. A re-run with the same --out skips the files converted before (state in --out).
`;

/** Exit with a message; 2 for usage and configuration errors. */
function die(message: string, code = 2): never {
  process.stderr.write(`keyward: ${message}\n`);
  process.exit(code);
}

function positiveInt(value: string | undefined, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) die(`${name} must be a positive integer, got ${value}`);
  return n;
}

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      url: { type: 'string' },
      'client-id': { type: 'string' },
      'client-secret': { type: 'string' },
      out: { type: 'string', short: 'o' },
      concurrency: { type: 'string', short: 'c' },
      metadata: { type: 'string' },
      'metadata-file': { type: 'string' },
      'remote-prefix': { type: 'string' },
      poll: { type: 'string' },
      'progress-interval': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const [command, target] = positionals;
  if (values.help || !command) {
    process.stdout.write(USAGE);
    return values.help ? 0 : 2;
  }
  const url = values.url ?? process.env.KEYWARD_URL;
  const clientId = values['client-id'] ?? process.env.KEYWARD_CLIENT_ID;
  const clientSecret = values['client-secret'] ?? process.env.KEYWARD_CLIENT_SECRET;
  if (!url) die('the service URL is missing: --url or KEYWARD_URL');
  if (!clientId || !clientSecret) die('credentials are missing: --client-id/--client-secret or KEYWARD_CLIENT_ID/KEYWARD_CLIENT_SECRET');
  const client = new KeywardClient({ url, clientId, clientSecret });

  if (command === 'analyze') {
    if (!target) die('analyze needs a file');
    const answer = await client.analyze(target, statSync(target).size);
    process.stdout.write(`${JSON.stringify(answer, null, 2)}\n`);
    return 0;
  }
  if (command !== 'migrate') die(`unknown command ${command}\n${USAGE}`);
  if (!target) die('migrate needs a source directory or s3://bucket/prefix');
  if (!values.out) die('migrate needs --out <dir | s3://bucket/prefix>');
  let metadata: unknown = {};
  try {
    if (values['metadata-file']) metadata = JSON.parse(readFileSync(values['metadata-file'], 'utf8'));
    else if (values.metadata) metadata = JSON.parse(values.metadata);
  } catch (err) {
    die(`metadata is not valid JSON: ${(err as Error).message}`);
  }
  if (!metadata || typeof metadata !== 'object' || Array.isArray(metadata)) die('metadata must be a JSON object');
  const source = parseLocation(target);
  const out = parseLocation(values.out);
  if (source.kind === 'dir' && !statSync(source.path, { throwIfNoEntry: false })?.isDirectory()) die(`${target} is not a directory`);
  if (source.kind === 's3' && out.kind === 's3' && out.bucket !== source.bucket) die('with an s3:// source the output must be in the same bucket (the service writes only to its own)');
  return migrate(client, {
    source,
    out,
    concurrency: positiveInt(values.concurrency, '--concurrency', 4),
    metadata: metadata as Record<string, unknown>,
    remotePrefix: values['remote-prefix'],
    pollMs: positiveInt(values.poll, '--poll', 1000),
    progressIntervalMs: positiveInt(values['progress-interval'], '--progress-interval', 10_000),
    stderr: process.stderr,
    stdout: process.stdout,
  });
}

try {
  process.exitCode = await main(process.argv.slice(2));
} catch (err) {
  if (err instanceof ApiError) die(err.message, 1);
  if (err instanceof TypeError && (err as { code?: string }).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') die(`${err.message}\n${USAGE}`);
  die((err as Error).message ?? String(err), 1);
}
