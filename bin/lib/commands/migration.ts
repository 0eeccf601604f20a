/**
 * The batch migration's commands: `migrate` (a directory or bucket prefix of PKCS#7/CMS files to
 * JOSE through the service, bin/lib/migrate.ts) and `analyze` (one file). Both authenticate as a
 * workload: the saved login of --profile, or client credentials from the environment.
 */
import { createReadStream, readFileSync, statSync } from 'node:fs';
import { createApi } from '../api-client.ts';
import { migrate, parseLocation } from '../migrate.ts';
import { durableOp, runDurableOp, startDurable } from '../durable-migration.ts';
import { EXIT, UsageError, str, type Command } from '../command.ts';
import { WORKLOAD_OPTIONS, workloadClient } from './session.ts';

function positiveInt(value: string | undefined, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1)
    throw new UsageError(`${name} must be a positive integer, got ${value}`);
  return n;
}

export const migrateCommand: Command = {
  name: 'migrate',
  summary: 'Convert a directory or bucket prefix of PKCS#7/CMS files to JOSE through the service',
  args: [
    '<dir | s3://bucket/prefix | status|follow|pause|resume|cancel|retry|report>',
    '[migration id]',
  ],
  details: [
    'With --durable and an s3:// source and output: one durable migration in the service (any size;',
    'it resumes by itself after crashes), followed with its rate and ETA; the id is printed on',
    'stdout. `keyward migrate status|follow|pause|resume|cancel|retry ID` act on it, and',
    '`keyward migrate report ID [--format csv]` writes its report (JSON Lines or CSV).',
    "s3://bucket/prefix names objects the service already holds: its own bucket, under your tenant's",
    'area. A re-run with the same --out skips the files converted before (state in --out).',
    'Authenticates as the login of --profile (a workload: `keyward login --client-id`), or with',
    'KEYWARD_URL, KEYWARD_CLIENT_ID and KEYWARD_CLIENT_SECRET in the environment.',
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
    'target-kid': {
      type: 'string',
      multiple: true,
      value: '<kid[,kid...]>',
      help: 'who the results are for (metadata.targetKid): several kids give one JWE recipient each',
    },
    'remote-prefix': {
      type: 'string',
      value: '<p>',
      help: 'where uploads and results go in your object storage (default migrate/<hash>/)',
    },
    durable: {
      type: 'boolean',
      help: 'an s3:// source as one durable migration (docs/migrations.md) instead of a batch',
    },
    rate: {
      type: 'string',
      value: '<objects/s>',
      help: "with --durable: the migration's rate limit (default none of its own)",
    },
    format: {
      type: 'string',
      value: '<jsonl|csv>',
      help: 'of `migrate report ID` (default jsonl)',
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
    const follow = {
      pollMs: positiveInt(str(v, 'poll'), '--poll', 1000),
      intervalMs: positiveInt(str(v, 'progress-interval'), '--progress-interval', 10_000),
      stderr: process.stderr,
    };
    const format = str(v, 'format') ?? 'jsonl';
    if (format !== 'jsonl' && format !== 'csv') throw new UsageError('--format is jsonl or csv');
    const durable = durableOp(inv.args);
    if (durable)
      return runDurableOp(durable.op, durable.id, {
        api: createApi(client),
        stdout: process.stdout,
        follow,
        format,
      });
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
    const targets = ((v['target-kid'] as string[] | undefined) ?? []).flatMap((t) =>
      t.split(',').map((k) => k.trim()),
    );
    if (targets.some((k) => !k)) throw new UsageError('--target-kid names an empty kid');
    if (targets.length)
      (metadata as Record<string, unknown>).targetKid = targets.length === 1 ? targets[0] : targets;
    const source = parseLocation(target);
    const out = parseLocation(outArg);
    if (source.kind === 'dir' && !statSync(source.path, { throwIfNoEntry: false })?.isDirectory())
      throw new UsageError(`${target} is not a directory`);
    if (source.kind === 's3' && out.kind === 's3' && out.bucket !== source.bucket)
      throw new UsageError(
        'with an s3:// source the output must be in the same bucket (the service writes only to its own)',
      );
    if (v.durable === true) {
      if (source.kind !== 's3' || out.kind !== 's3')
        throw new UsageError(
          '--durable takes an s3:// source and an s3:// --out in the same bucket',
        );
      return startDurable(
        { api: createApi(client), stdout: process.stdout, follow, format },
        {
          prefix: source.prefix,
          outputPrefix: out.prefix,
          metadata: metadata as Record<string, unknown>,
          ...(str(v, 'rate') ? { rateLimit: positiveInt(str(v, 'rate'), '--rate', 0) } : {}),
        },
      );
    }
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

export const analyzeCommand: Command = {
  name: 'analyze',
  summary: 'Ask the service what a PKCS#7/CMS file holds and whether it converts (JSON)',
  args: ['<file>'],
  options: WORKLOAD_OPTIONS,
  async run(inv) {
    const file = inv.args[0];
    const answer = await createApi(workloadClient(inv)).analyzePkcs7({
      body: { open: () => createReadStream(file), length: statSync(file).size },
    });
    inv.stdout.write(`${JSON.stringify(answer, null, 2)}\n`);
    return EXIT.ok;
  },
};
