/**
 * The keyward command line (package bin, through bin/keyward.js): `keyward --help` lists the
 * commands, `keyward <command> --help` their options. Operators' daily work (login, tenants,
 * workloads, roles, users, keys, encrypt/decrypt/sign/verify/data-key/re-encrypt/mac, audit) goes
 * through the typed client of bin/lib/api-client.ts on a cached login (bin/lib/session.ts).
 * Exit codes: 0 ok, 1 refused by the service (4xx), 2 usage error, 3 unreachable or 5xx,
 * 4 a verification answered false.
 *
 * The root names each command with its summary only (bin/lib/commands/index.ts); a command's
 * module is imported when the command line reaches it.
 */
import { EXIT, UsageError, dispatch, type Command } from './lib/command.ts';

import { COMMANDS } from './lib/commands/index.ts';

const root: Command = {
  name: 'keyward',
  summary: [
    'Keyward key management from the command line.',
    '',
    'Start with `keyward login`. Admin commands (tenants, workloads, roles, users, keys) need a',
    "person's login; crypto and audit commands a workload's (use --profile to keep both).",
    'No command takes a secret as an argument: passwords and client secrets come from the',
    'environment (KEYWARD_PASSWORD, KEYWARD_CLIENT_SECRET, ...) or stdin.',
    'Exit codes: 0 ok, 1 refused by the service (4xx), 2 usage error, 3 unreachable or 5xx,',
    '4 a verification answered false (verify, mac verify, audit verify).',
  ].join('\n'),
  subcommands: COMMANDS,
};

/**
 * The exit code and message of a failure. Errors are told apart by name, not instanceof, so this
 * module imports none of the client or session code, as errors crossing a thread or process
 * boundary are told apart by code.
 */
function failure(err: unknown): [number, string] {
  const e = err as {
    name?: string;
    message?: string;
    status?: number;
    slug?: string;
    exitCode?: number;
    code?: string;
    cause?: { code?: string; message?: string };
  };
  if (err instanceof UsageError) return [EXIT.usage, e.message!];
  if (e?.name === 'SessionError') return [e.exitCode ?? EXIT.refused, e.message!];
  if (e?.name === 'TenantError') return [EXIT.usage, e.message!];
  if (e?.name === 'ApiError')
    return [(e.status ?? 0) >= 500 ? EXIT.unreachable : EXIT.refused, `${e.message} (${e.slug})`];
  if (err instanceof TypeError && err.message === 'fetch failed')
    return [
      EXIT.unreachable,
      `the service is unreachable: ${e.cause?.code ?? e.cause?.message ?? 'fetch failed'}`,
    ];
  if (e?.code === 'ENOENT' || e?.code === 'EISDIR' || e?.code === 'EACCES')
    return [EXIT.usage, e.message!];
  return [EXIT.refused, e?.message ?? String(err)];
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
