/**
 * One configuration schema: every key has a doc line, an env name and a default. The config is
 * parsed once at boot, checked by named cross-field rules, and frozen. A bad value stops the
 * start with a message naming the variable.
 */
import { readFileSync } from 'node:fs';
import { parseKeyring, type KeyringEntry } from '../crypto/keyring.ts';
import { SCHEMA, type Field } from './schema.ts';

type Schema = typeof SCHEMA;
type ValueOf<F extends Field> = F['kind'] extends 'int' | 'fraction'
  ? number
  : F['kind'] extends 'bool'
    ? boolean
    : F['kind'] extends 'keyring'
      ? readonly KeyringEntry[]
      : F['kind'] extends 'list'
        ? readonly string[]
        : string;
type HasDefault<F> = F extends { default: string } | { derived: true } ? true : false;

/** The validated, frozen configuration. */
export type Config = {
  readonly [K in keyof Schema]: HasDefault<Schema[K]> extends true
    ? ValueOf<Schema[K]>
    : ValueOf<Schema[K]> | undefined;
};

/** Thrown at boot when a variable is invalid; the message names the variable. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

function parseField(field: Field, raw: string): unknown {
  switch (field.kind) {
    case 'int': {
      if (!/^\d+$/.test(raw))
        throw new ConfigError(`${field.env} must be a non-negative integer, got "${raw}"`);
      const n = Number(raw);
      if (field.min !== undefined && n < field.min)
        throw new ConfigError(`${field.env} must be at least ${field.min}, got ${n}`);
      return n;
    }
    case 'fraction': {
      const n = /^(0|1|0?\.\d+|1\.0*)$/.test(raw) ? Number(raw) : Number.NaN;
      if (!(n >= 0 && n <= 1))
        throw new ConfigError(`${field.env} must be a number from 0 to 1, got "${raw}"`);
      return n;
    }
    case 'bool':
      if (!['true', 'false', '1', '0'].includes(raw))
        throw new ConfigError(`${field.env} must be true or false, got "${raw}"`);
      return raw === 'true' || raw === '1';
    case 'url':
      if (!URL.canParse(raw)) throw new ConfigError(`${field.env} must be a URL, got "${raw}"`);
      return raw.replace(/\/+$/, '');
    case 'keyring':
      try {
        return Object.freeze(parseKeyring(raw, field.env));
      } catch (err) {
        throw new ConfigError((err as Error).message);
      }
    case 'list':
      // Comma-separated, blanks around the commas and empty items dropped: read once, at boot.
      return Object.freeze(
        raw
          .split(',')
          .map((item) => item.trim())
          .filter(Boolean),
      );
    case 'enum':
      if (!field.values?.includes(raw))
        throw new ConfigError(
          `${field.env} must be one of ${field.values?.join(', ')}, got "${raw}"`,
        );
      return raw;
    default:
      if (field.pattern && !field.pattern.test(raw))
        throw new ConfigError(`${field.env} must match ${field.pattern}, got "${raw}"`);
      return raw;
  }
}

/** Named cross-field rules, run after every field parsed. */
const CHECKS: Array<{ name: string; check: (c: Record<string, unknown>) => string | null }> = [
  {
    name: 'tenant-share-within-worker',
    check: (c) =>
      (c.workerTenantConcurrency as number) > (c.workerConcurrency as number)
        ? `WORKER_TENANT_CONCURRENCY (${c.workerTenantConcurrency as number}) must be at most WORKER_CONCURRENCY (${c.workerConcurrency as number})`
        : null,
  },
  {
    name: 'worker-nice-range',
    check: (c) =>
      (c.workerNice as number) > 19
        ? `WORKER_NICE must be 0 to 19 (the scheduler's range), got ${c.workerNice as number}`
        : null,
  },
  {
    name: 's3-credentials',
    check: (c) =>
      c.s3Endpoint && (!c.s3AccessKey || !c.s3SecretKey)
        ? 'S3_ENDPOINT is set, so S3_ACCESS_KEY and S3_SECRET_KEY are required'
        : null,
  },
  {
    // A retention shorter than a job's retries would delete inputs under running jobs.
    name: 'retention-outlives-jobs',
    check: (c) =>
      (c.migrationObjectRetention as number) > 0 && (c.migrationObjectRetention as number) < 3600
        ? `MIGRATION_OBJECT_RETENTION must be 0 (off) or at least 3600 seconds, got ${c.migrationObjectRetention as number}`
        : null,
  },
  {
    // PGlite is one process's database: several API processes need a shared Postgres.
    name: 'cluster-needs-postgres',
    check: (c) =>
      (c.webConcurrency as number) > 1 && !c.databaseUrl
        ? 'WEB_CONCURRENCY > 1 needs DATABASE_URL (the embedded PGlite serves one process)'
        : null,
  },
  {
    name: 'smtp-one-server',
    check: (c) =>
      c.smtpUrl && c.smtpHost ? 'SMTP_URL and SMTP_HOST are both set; set one of them' : null,
  },
  {
    name: 'smtp-login-pair',
    check: (c) =>
      Boolean(c.smtpUser) !== Boolean(c.smtpPassword)
        ? 'SMTP_USER and SMTP_PASSWORD go together; one is set without the other'
        : null,
  },
  {
    name: 'bootstrap-pair',
    check: (c) =>
      c.bootstrapAdminPassword && !c.bootstrapAdminEmail
        ? 'KEYWARD_BOOTSTRAP_ADMIN_PASSWORD is set without KEYWARD_BOOTSTRAP_ADMIN_EMAIL'
        : null,
  },
  {
    name: 'bootstrap-password-strength',
    check: (c) =>
      typeof c.bootstrapAdminPassword === 'string' && c.bootstrapAdminPassword.length < 12
        ? 'KEYWARD_BOOTSTRAP_ADMIN_PASSWORD must be at least 12 characters'
        : null,
  },
];

/**
 * The raw value of a field: its variable, or for a secret the file `${env}_FILE` names (Docker
 * secrets style, so the value is not in `docker inspect`), read once here with one trailing
 * newline trimmed. Both set is ambiguous and stops the start, as does a file that cannot be read.
 */
function rawValue(field: Field, env: Record<string, string | undefined>): string | undefined {
  const direct = env[field.env];
  const fileVar = `${field.env}_FILE`;
  const file = field.secret ? env[fileVar] : undefined;
  if (file === undefined || file === '') return direct;
  if (direct !== undefined && direct !== '')
    throw new ConfigError(`${field.env} and ${fileVar} are both set; set one of them`);
  try {
    return readFileSync(file, 'utf8').replace(/\r?\n$/, '');
  } catch (err) {
    const reason = (err as NodeJS.ErrnoException).code ?? String(err);
    throw new ConfigError(`${fileVar} names "${file}", which cannot be read (${reason})`, {
      cause: err,
    });
  }
}

/** The host part of a URL for a listening address: a wildcard means this machine. */
function urlHost(host: string): string {
  if (host === '0.0.0.0' || host === '::' || host === '') return '127.0.0.1';
  return host.includes(':') ? `[${host}]` : host;
}

/** The soft open-file limit of this process (Linux /proc), or null where it cannot be read. */
function openFileLimit(): number | null {
  try {
    const m = /^Max open files\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

/** Named derivations of keys whose default depends on others, run after every field parsed. */
const DERIVED: Array<{ key: keyof Schema; derive: (c: Record<string, unknown>) => unknown }> = [
  {
    // Past the open-file limit accept() fails and nothing is answered, health included: the cap
    // stays below it, leaving a quarter for the database, Redis, files and the reserve.
    key: 'maxConnections',
    derive: () => {
      const files = openFileLimit();
      return files === null ? 4096 : Math.max(1, Math.min(4096, Math.floor((files * 3) / 4)));
    },
  },
  {
    // Issuer, jwks_uri and problem types must name the port the API really listens on.
    key: 'publicBaseUrl',
    derive: (c) => `http://${urlHost(c.host as string)}:${c.port as number}`,
  },
];

/** Parses and validates the environment once; throws ConfigError naming the variable. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const out: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(SCHEMA) as Array<[string, Field]>) {
    const raw = rawValue(field, env);
    const value = raw === undefined || raw === '' ? field.default : raw;
    out[key] = value === undefined ? undefined : parseField(field, value);
  }
  for (const { key, derive } of DERIVED) out[key] ??= derive(out);
  for (const rule of CHECKS) {
    const message = rule.check(out);
    if (message) throw new ConfigError(`${message} (check ${rule.name})`);
  }
  return Object.freeze(out) as Config;
}

/** Markdown table of the schema, for docs/configuration.md. */
export function configTable(): string {
  const shown = (f: Field) =>
    f.defaultDoc ?? (f.default !== undefined && !f.secret ? `\`${f.default}\`` : '');
  const doc = (f: Field) => (f.secret ? `${f.doc}; or a file named by \`${f.env}_FILE\`` : f.doc);
  const rows = (Object.values(SCHEMA) as Field[]).map(
    (f) => `| \`${f.env}\` | ${doc(f)} | ${shown(f)} |`,
  );
  return ['| variable | meaning | default |', '|---|---|---|', ...rows].join('\n');
}

/**
 * The config of a process entry (API, worker), checked before anything else loads: a bad variable
 * ends the process with exit code 2 and one line naming it, whatever else would fail later.
 */
export function configOrExit(
  processName: string,
  env: Record<string, string | undefined> = process.env,
): Config {
  try {
    return loadConfig(env);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    console.error(`${processName}: invalid configuration: ${err.message}`);
    process.exit(2);
  }
}
