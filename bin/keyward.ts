/**
 * The keyward command line (package bin, through bin/keyward.js): `keyward --help` lists the
 * commands, `keyward <command> --help` their options. Operators' daily work (login, tenants,
 * workloads, roles, users, keys, encrypt/decrypt/sign/verify/data-key/re-encrypt/mac, audit) goes
 * through the typed client of bin/lib/api-client.ts on a cached login (bin/lib/session.ts); the
 * batch migration (`migrate`, `analyze`) authenticates as a workload from flags or environment.
 * Exit codes: 0 ok, 1 refused by the service (4xx), 2 usage error, 3 unreachable or 5xx,
 * 4 a verification answered false.
 */
import { readFileSync, statSync } from 'node:fs';
import { ApiError, KeywardClient } from './lib/client.ts';
import { migrate, parseLocation } from './lib/migrate.ts';
import { EXIT, UsageError, dispatch, str, type Command, type Invocation } from './lib/command.ts';
import { SessionError } from './lib/session.ts';
import { sessionCommands } from './lib/commands/session.ts';
import {
  rolesCommand,
  tenantsCommand,
  usersCommand,
  workloadsCommand,
} from './lib/commands/admin.ts';
import { keysCommand } from './lib/commands/keys.ts';
import { adminCommand } from './lib/commands/platform.ts';
import { backupCommand, restoreCommand } from './lib/commands/backup.ts';
import { cryptoCommands } from './lib/commands/crypto.ts';
import { localJoseCommands } from './lib/commands/local-jose.ts';

function positiveInt(value: string | undefined, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1)
    throw new UsageError(`${name} must be a positive integer, got ${value}`);
  return n;
}

/** The workload client of migrate and analyze: --url/--client-id/--client-secret or their environment variables. */
function workloadClient(inv: Invocation): KeywardClient {
  const url = str(inv.values, 'url') ?? process.env.KEYWARD_URL;
  const clientId = str(inv.values, 'client-id') ?? process.env.KEYWARD_CLIENT_ID;
  const clientSecret = str(inv.values, 'client-secret') ?? process.env.KEYWARD_CLIENT_SECRET;
  if (!url) throw new UsageError('the service URL is missing: --url or KEYWARD_URL');
  if (!clientId || !clientSecret)
    throw new UsageError(
      'credentials are missing: --client-id/--client-secret or KEYWARD_CLIENT_ID/KEYWARD_CLIENT_SECRET',
    );
  return new KeywardClient({ url, clientId, clientSecret });
}

const WORKLOAD_OPTIONS = {
  'client-id': {
    type: 'string',
    value: '<id>',
    help: 'workload client id (env KEYWARD_CLIENT_ID)',
  },
  'client-secret': {
    type: 'string',
    value: '<secret>',
    help: 'workload client secret (env KEYWARD_CLIENT_SECRET)',
  },
} as const;

const migrateCommand: Command = {
  name: 'migrate',
  summary: 'Convert a directory or bucket prefix of PKCS#7/CMS files to JOSE through the service',
  args: ['<dir | s3://bucket/prefix>'],
  details: [
    "s3://bucket/prefix names objects the service already holds: its own bucket, under your tenant's",
    'area. A re-run with the same --out skips the files converted before (state in --out).',
    'Authenticates as a workload: --url, --client-id, --client-secret or KEYWARD_URL, KEYWARD_CLIENT_ID, KEYWARD_CLIENT_SECRET.',
  ].join('\n'),
  options: {
    ...WORKLOAD_OPTIONS,
    out: {
      type: 'string',
      short: 'o',
      value: '<dir | s3://bucket/prefix>',
      help: 'where results go (required)',
    },
    concurrency: {
      type: 'string',
      short: 'c',
      value: '<n>',
      help: 'files in flight at once (default 4)',
    },
    metadata: {
      type: 'string',
      value: '<json>',
      help: 'conversion metadata, e.g. \'{"contentEncryption":"A256GCM"}\' (default {})',
    },
    'metadata-file': { type: 'string', value: '<file>', help: 'the same, from a file' },
    'remote-prefix': {
      type: 'string',
      value: '<p>',
      help: 'where uploads and results go in your object storage (default migrate/<hash>/)',
    },
    cleanup: {
      type: 'boolean',
      help: "once a file's results are downloaded, delete its upload and its results from the service's storage (a directory source and --out directory)",
    },
    poll: { type: 'string', value: '<ms>', help: 'how often job status is read (default 1000)' },
    'progress-interval': {
      type: 'string',
      value: '<ms>',
      help: 'progress line period when stderr is not a terminal (default 10000)',
    },
  },
  async run(inv) {
    const v = inv.values;
    const target = inv.args[0];
    const client = workloadClient(inv);
    const outArg = str(v, 'out');
    if (!outArg) throw new UsageError('migrate needs --out <dir | s3://bucket/prefix>');
    let metadata: unknown = {};
    try {
      if (str(v, 'metadata-file'))
        metadata = JSON.parse(readFileSync(str(v, 'metadata-file')!, 'utf8'));
      else if (str(v, 'metadata')) metadata = JSON.parse(str(v, 'metadata')!);
    } catch (err) {
      throw new UsageError(`metadata is not valid JSON: ${(err as Error).message}`);
    }
    if (!metadata || typeof metadata !== 'object' || Array.isArray(metadata))
      throw new UsageError('metadata must be a JSON object');
    const source = parseLocation(target);
    const out = parseLocation(outArg);
    if (source.kind === 'dir' && !statSync(source.path, { throwIfNoEntry: false })?.isDirectory())
      throw new UsageError(`${target} is not a directory`);
    if (source.kind === 's3' && out.kind === 's3' && out.bucket !== source.bucket)
      throw new UsageError(
        'with an s3:// source the output must be in the same bucket (the service writes only to its own)',
      );
    return migrate(client, {
      source,
      out,
      concurrency: positiveInt(str(v, 'concurrency'), '--concurrency', 4),
      metadata: metadata as Record<string, unknown>,
      remotePrefix: str(v, 'remote-prefix'),
      cleanup: v.cleanup === true,
      pollMs: positiveInt(str(v, 'poll'), '--poll', 1000),
      progressIntervalMs: positiveInt(str(v, 'progress-interval'), '--progress-interval', 10_000),
      stderr: process.stderr,
      stdout: process.stdout,
    });
  },
};

const analyzeCommand: Command = {
  name: 'analyze',
  summary: 'Ask the service what a PKCS#7/CMS file holds and whether it converts (JSON)',
  args: ['<file>'],
  options: WORKLOAD_OPTIONS,
  async run(inv) {
    const client = workloadClient(inv);
    const answer = await client.analyze(inv.args[0], statSync(inv.args[0]).size);
    inv.stdout.write(`${JSON.stringify(answer, null, 2)}\n`);
    return EXIT.ok;
  },
};

const root: Command = {
  name: 'keyward',
  summary: [
    'Keyward key management from the command line.',
    '',
    'Start with `keyward login`. Admin commands (tenants, workloads, roles, users, keys) need a',
    "person's login; crypto and audit commands a workload's (use --profile to keep both).",
    'Exit codes: 0 ok, 1 refused by the service (4xx), 2 usage error, 3 unreachable or 5xx,',
    '4 a verification answered false (verify, mac verify, audit verify).',
  ].join('\n'),
  subcommands: [
    ...sessionCommands,
    tenantsCommand,
    workloadsCommand,
    rolesCommand,
    usersCommand,
    keysCommand,
    adminCommand,
    backupCommand,
    restoreCommand,
    ...cryptoCommands,
    ...localJoseCommands,
    migrateCommand,
    analyzeCommand,
  ],
};

/** The exit code and message of a failure. */
function failure(err: unknown): [number, string] {
  if (err instanceof UsageError) return [EXIT.usage, err.message];
  if (err instanceof SessionError) return [err.exitCode, err.message];
  if (err instanceof ApiError)
    return [err.status >= 500 ? EXIT.unreachable : EXIT.refused, `${err.message} (${err.slug})`];
  const cause = (err as { cause?: { code?: string; message?: string } })?.cause;
  if (err instanceof TypeError && err.message === 'fetch failed')
    return [
      EXIT.unreachable,
      `the service is unreachable: ${cause?.code ?? cause?.message ?? 'fetch failed'}`,
    ];
  const code = (err as { code?: string })?.code;
  if (code === 'ENOENT' || code === 'EISDIR' || code === 'EACCES')
    return [EXIT.usage, (err as Error).message];
  return [EXIT.refused, (err as Error)?.message ?? String(err)];
}

try {
  process.exitCode = await dispatch(root, process.argv.slice(2), {
    stdout: process.stdout,
    stderr: process.stderr,
  });
} catch (err) {
  const [code, message] = failure(err);
  process.stderr.write(`keyward: ${message}\n`);
  process.exitCode = code;
}
