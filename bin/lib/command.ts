/**
 * The command tree of the `keyward` CLI: each command declares its arguments and options once,
 * and that one declaration drives parsing (node:util parseArgs, strict), `--help` at every level
 * and the usage errors. Also the exit codes, the output (tables or `--output json`) and the
 * reading of files, stdin and secrets shared by the commands.
 */
import { readFileSync } from 'node:fs';
import { pipeline } from 'node:stream/promises';
import { parseArgs } from 'node:util';
import type { Content } from './files.ts';

/** Exit codes scripts can rely on (docs/cli.md). */
export const EXIT = {
  ok: 0,
  /** The service refused the request (a 4xx problem or OAuth error), or the session cannot be renewed. */
  refused: 1,
  /** A usage or configuration error: nothing was sent. */
  usage: 2,
  /** The service is unreachable or answered 5xx. */
  unreachable: 3,
  /** A verification answered false: signature, MAC or audit chain. */
  invalid: 4,
} as const;

/** A usage error: the command line is wrong (exit 2, with the command's usage). */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

export interface OptionDef {
  type: 'string' | 'boolean';
  help: string;
  /** Placeholder shown in help, e.g. `<kid>`. */
  value?: string;
  short?: string;
  multiple?: boolean;
}

export type Values = Record<string, string | boolean | string[] | undefined>;

export interface Invocation {
  values: Values;
  args: string[];
  /** The command's path, e.g. `keys rotate`. */
  path: string;
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
}

export interface Command {
  name: string;
  summary: string;
  /** Positional arguments: `<name>` required, `[name]` optional. */
  args?: string[];
  options?: Record<string, OptionDef>;
  /** More help text, after the synopsis. */
  details?: string;
  run?: (inv: Invocation) => Promise<number | void>;
  /**
   * The command makes no call to the service (it reads local files or the cached login), so it acts
   * in no tenant: --tenant is refused with a message rather than ignored.
   */
  local?: boolean;
  subcommands?: Command[];
  /**
   * Loads the whole command (options, run, subcommands) when the command line reaches it: the
   * root lists names and summaries only, so `keyward --version` and `keyward --help` import no
   * command module (each one loaded cost the CLI's start time).
   */
  load?: () => Promise<Command>;
}

/** Options every command takes. */
const GLOBAL_OPTIONS: Record<string, OptionDef> = {
  url: {
    type: 'string',
    value: '<url>',
    help: "service base URL for login (env KEYWARD_URL); later commands use the login's",
  },
  profile: {
    type: 'string',
    value: '<name>',
    help: 'login profile (env KEYWARD_PROFILE, default "default")',
  },
  tenant: {
    type: 'string',
    value: '<id>',
    help: "tenant of the password login and of tenant admin commands (env KEYWARD_TENANT; default the login's); other commands act in the login's tenant and refuse another",
  },
  output: {
    type: 'string',
    value: 'table|json',
    help: 'human-readable output (default) or JSON for scripts',
  },
  help: { type: 'boolean', short: 'h', help: 'this help' },
};

const flag = (name: string, o: OptionDef) =>
  `${o.short ? `-${o.short}, ` : ''}--${name}${o.type === 'string' ? ` ${o.value ?? '<value>'}` : ''}${o.multiple ? ' (repeatable)' : ''}`;

function optionLines(options: Record<string, OptionDef>): string[] {
  const entries = Object.entries(options);
  const width = Math.max(...entries.map(([n, o]) => flag(n, o).length));
  return entries.map(([n, o]) => `  ${flag(n, o).padEnd(width)}  ${o.help}`);
}

/** The help text of a command (its path is `keyward ...`). */
function helpOf(cmd: Command, path: string): string {
  const lines: string[] = [];
  if (cmd.subcommands) {
    lines.push(`usage: ${path} <command> [options]`, '', cmd.summary, '', 'commands:');
    const width = Math.max(...cmd.subcommands.map((c) => c.name.length));
    for (const c of cmd.subcommands) lines.push(`  ${c.name.padEnd(width)}  ${c.summary}`);
    lines.push('', `Run \`${path} <command> --help\` for a command's options.`);
  } else {
    lines.push(`usage: ${[path, ...(cmd.args ?? [])].join(' ')} [options]`, '', cmd.summary);
    if (cmd.details) lines.push('', cmd.details);
    if (cmd.options && Object.keys(cmd.options).length)
      lines.push('', 'options:', ...optionLines(cmd.options));
  }
  lines.push('', 'global options:', ...optionLines(GLOBAL_OPTIONS));
  return `${lines.join('\n')}\n`;
}

/** The command named by the leading words of argv (options may come between them), and the words it used. */
async function resolve(
  root: Command,
  argv: string[],
): Promise<{ cmd: Command; path: string[]; rest: string[] }> {
  const takesValue = (token: string, options: Record<string, OptionDef>) => {
    if (!token.startsWith('--') || token.includes('=')) return false;
    const name = token.slice(2);
    return (Object.hasOwn(options, name) ? options[name] : undefined)?.type === 'string';
  };
  let cmd = root;
  const path: string[] = [];
  const rest: string[] = [];
  let descending = true;
  for (let i = 0; i < argv.length; i++) {
    const token = argv[i];
    if (!descending || token.startsWith('-')) {
      rest.push(token);
      if (
        descending &&
        takesValue(token, { ...GLOBAL_OPTIONS, ...cmd.options }) &&
        i + 1 < argv.length
      )
        rest.push(argv[++i]);
      continue;
    }
    let next = cmd.subcommands?.find((c) => c.name === token);
    if (next?.load) next = await next.load();
    if (next) {
      cmd = next;
      path.push(token);
    } else {
      descending = false;
      rest.push(token);
    }
  }
  return { cmd, path, rest };
}

/** --tenant given to a command that acts in no tenant: said, not silently ignored. */
export function localTenantError(said: string): UsageError {
  return new UsageError(
    `${said} works locally and acts in no tenant: drop --tenant (it names the tenant of admin commands and of a password login)`,
  );
}

/** Parses and runs argv against the tree; answers the exit code (errors other than usage ones propagate). */
export async function dispatch(
  root: Command,
  argv: string[],
  io: { stdout: NodeJS.WritableStream; stderr: NodeJS.WritableStream },
): Promise<number> {
  const { cmd, path, rest } = await resolve(root, argv);
  const name = ['keyward', ...path].join(' ');
  // Messages go out as `keyward: <message>`: name the command without the program again.
  const said = path.join(' ') || 'keyward';
  const options = { ...GLOBAL_OPTIONS, ...cmd.options };
  let parsed: { values: Values; positionals: string[] };
  try {
    parsed = parseArgs({ args: rest, options, allowPositionals: true, strict: true }) as {
      values: Values;
      positionals: string[];
    };
  } catch (err) {
    throw new UsageError(`${(err as Error).message}\n\n${helpOf(cmd, name)}`);
  }
  if (parsed.values.help) {
    io.stdout.write(helpOf(cmd, name));
    return EXIT.ok;
  }
  if (!cmd.run) {
    const unknown = parsed.positionals[0];
    throw new UsageError(
      `${unknown ? `unknown command: ${said} ${unknown}` : `${said} needs a command`}\n\n${helpOf(cmd, name)}`,
    );
  }
  const args = cmd.args ?? [];
  const required = args.filter((a) => a.startsWith('<')).length;
  if (parsed.positionals.length < required)
    throw new UsageError(
      `${said} needs ${args.slice(parsed.positionals.length, required).join(' ')}\n\n${helpOf(cmd, name)}`,
    );
  if (parsed.positionals.length > args.length)
    throw new UsageError(
      `${said}: unexpected argument ${parsed.positionals[args.length]}\n\n${helpOf(cmd, name)}`,
    );
  if (cmd.local && parsed.values.tenant !== undefined) throw localTenantError(said);
  const output = parsed.values.output;
  if (output !== undefined && output !== 'table' && output !== 'json')
    throw new UsageError(`--output must be table or json, got ${String(output)}`);
  return (
    (await cmd.run({
      values: parsed.values,
      args: parsed.positionals,
      path: path.join(' '),
      ...io,
    })) ?? EXIT.ok
  );
}

/**
 * A usage error unless this Node is at least `major`: the packaged CLI runs on Node 20, and the
 * few commands that reuse the service's own readers (keystores: ML-KEM and ML-DSA keys through
 * node:crypto) need the service's Node 24.
 */
export function requireNode(major: number, what: string): void {
  const current = Number(process.versions.node.split('.')[0]);
  if (current < major)
    throw new UsageError(
      `${what} needs Node ${major} or later (this is ${process.version}): it reads keys with the service's own keystore reader`,
    );
}

// ---- values ----

/** A string option, or undefined. */
export const str = (v: Values, name: string): string | undefined =>
  typeof v[name] === 'string' ? (v[name] as string) : undefined;

/**
 * A string option sent as one of the values the document allows (`T`, an enum of
 * bin/lib/api-types.ts): the service checks it and its problem names the allowed ones, so the CLI
 * does not keep a copy of the list.
 */
export const allowed = <T extends string>(v: Values, name: string): T | undefined =>
  str(v, name) as T | undefined;

/** A whole number option within bounds (a usage error otherwise). */
export function int(v: Values, name: string, min: number, max: number): number | undefined {
  const s = str(v, name);
  if (s === undefined) return undefined;
  if (!/^-?\d{1,16}$/.test(s) || Number(s) < min || Number(s) > max)
    throw new UsageError(`--${name} must be a whole number from ${min} to ${max}, got ${s}`);
  return Number(s);
}

/** `--context k=v` (repeatable) as an object of strings; undefined when not given. */
export function contextOf(v: Values, name: string): Record<string, string> | undefined {
  const pairs = (v[name] as string[] | undefined) ?? [];
  if (pairs.length === 0) return undefined;
  const context = new Map<string, string>();
  for (const pair of pairs) {
    const at = pair.indexOf('=');
    if (at < 1) throw new UsageError(`--${name} takes key=value, got ${pair}`);
    const key = pair.slice(0, at);
    if (context.has(key)) throw new UsageError(`--${name} names ${key} twice`);
    context.set(key, pair.slice(at + 1));
  }
  return Object.fromEntries(context);
}

// ---- input and output ----

/** Reads all of stdin. */
async function readStdin(): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** The bytes of `--in FILE`, or stdin for `-` or no option. */
export async function readInput(file: string | undefined): Promise<Buffer> {
  return file === undefined || file === '-' ? readStdin() : readFileSync(file);
}

/**
 * Writes to `--out FILE` (0600 when `secret`; whole or not at all, bin/lib/files.ts), or stdout
 * for `-` or no option.
 */
export async function writeOutput(
  inv: Invocation,
  file: string | undefined,
  data: Content,
  secret = false,
): Promise<void> {
  if (file !== undefined && file !== '-') {
    // Loaded here: `keyward --help` and --version import only the command table.
    const { writeWhole } = await import('./files.ts');
    await writeWhole(file, data, secret ? { mode: 0o600 } : {});
    return;
  }
  if (typeof data === 'string' || data instanceof Uint8Array) inv.stdout.write(data);
  else await pipeline(data, inv.stdout, { end: false });
}

/** A secret from an option, else an environment variable, else stdin (a no-echo prompt on a terminal, else the first line). */
export async function readSecret(
  value: string | undefined,
  envName: string,
  prompt: string,
): Promise<string> {
  if (value) return value;
  if (process.env[envName]) return process.env[envName] as string;
  if (process.stdin.isTTY) return promptHidden(prompt);
  const text = (await readStdin()).toString('utf8').split(/\r?\n/)[0];
  if (!text) throw new UsageError(`${prompt} is missing: set ${envName} or pass it on stdin`);
  return text;
}

/**
 * A keystore's password from the environment: KEYWARD_KEYSTORE_PASSWORD, else KEYWARD_KEY_PASSWORD.
 * `keys import` and `open --key` both read either name (they once read one each).
 */
export const keystorePasswordFromEnv = (): string | undefined =>
  process.env.KEYWARD_KEYSTORE_PASSWORD || process.env.KEYWARD_KEY_PASSWORD || undefined;

function promptHidden(prompt: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const stdin = process.stdin;
    process.stderr.write(`${prompt}: `);
    stdin.setRawMode(true);
    stdin.resume();
    let text = '';
    const done = (err?: Error) => {
      stdin.setRawMode(false);
      stdin.pause();
      stdin.off('data', onData);
      process.stderr.write('\n');
      if (err) reject(err);
      else resolve(text);
    };
    const onData = (chunk: Buffer) => {
      for (const ch of chunk.toString('utf8')) {
        if (ch === '\r' || ch === '\n') return done();
        if (ch === '\u0003') return done(new UsageError('interrupted'));
        if (ch === '\u007f' || ch === '\b') text = text.slice(0, -1);
        else text += ch;
      }
    };
    stdin.on('data', onData);
  });
}

/** `--output json`? */
export const wantsJson = (inv: Invocation) => inv.values.output === 'json';

/**
 * Prints JSON for scripts, or the human view; either ends with a new line, so what is printed
 * last (often a secret shown once) is never glued to the shell's prompt or the next output.
 */
export function print(inv: Invocation, data: unknown, human: () => string): void {
  const text = wantsJson(inv) ? `${JSON.stringify(data, null, 2)}\n` : human();
  inv.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
}

const cell = (v: unknown): string =>
  v === undefined || v === null ? '-' : typeof v === 'object' ? JSON.stringify(v) : String(v);

/** A table: one header row, then one row per item. */
export function table<T>(rows: T[], columns: Array<[string, (row: T) => unknown]>): string {
  const cells = rows.map((r) => columns.map(([, get]) => cell(get(r))));
  const widths = columns.map(([h], i) => Math.max(h.length, ...cells.map((c) => c[i].length)));
  const line = (c: string[]) =>
    c
      .map((v, i) => (i === c.length - 1 ? v : v.padEnd(widths[i])))
      .join('  ')
      .trimEnd();
  return `${[line(columns.map(([h]) => h.toUpperCase())), ...cells.map(line)].join('\n')}\n`;
}

/** A record: one `name: value` line per field. */
export function record(
  data: Record<string, unknown>,
  fields: string[] = Object.keys(data),
): string {
  const shown = fields.filter((f) => Object.hasOwn(data, f));
  const width = Math.max(0, ...shown.map((f) => f.length));
  return `${shown.map((f) => `${`${f}:`.padEnd(width + 1)} ${cell(data[f])}`).join('\n')}\n`;
}
