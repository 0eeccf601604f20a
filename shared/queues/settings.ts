/**
 * Tuning of the queued jobs, read once from the environment by the API (producer side) and by
 * workers/main.ts (consumer side). Same shape as shared/config: every key has an env name, a doc
 * line and a default, and a bad value fails at boot naming the variable. Kept here rather than in
 * the main schema because only the queue code reads it.
 */
import { ConfigError } from '../config/index.ts';

interface Field {
  env: string;
  doc: string;
  default: string;
  min: number;
  pattern?: RegExp;
}

export const QUEUE_SCHEMA = {
  prefix: { env: 'QUEUE_PREFIX', doc: 'Redis key prefix of the BullMQ queues and batch records', default: 'keyward', min: 0, pattern: /^[A-Za-z0-9_.-]{1,64}$/ },
  attempts: { env: 'JOB_ATTEMPTS', doc: 'Attempts per conversion job before a transient fault fails it', default: '5', min: 1 },
  backoffMs: { env: 'JOB_BACKOFF_MS', doc: 'First retry delay of a job; doubles with each attempt', default: '2000', min: 0 },
  lockDurationMs: { env: 'JOB_LOCK_DURATION_MS', doc: 'Job lock lifetime; a worker that dies mid-job loses its job after about this long', default: '30000', min: 1000 },
  stalledIntervalMs: { env: 'JOB_STALLED_INTERVAL_MS', doc: 'How often workers look for jobs whose lock expired', default: '15000', min: 500 },
  maxStalled: { env: 'JOB_MAX_STALLED', doc: 'Times a job may be recovered from a dead worker before it fails', default: '3', min: 0 },
  retentionSeconds: { env: 'JOB_RETENTION_SECONDS', doc: 'How long finished jobs stay readable; batch records live four times as long', default: '604800', min: 60 },
  progressIntervalMs: { env: 'JOB_PROGRESS_INTERVAL_MS', doc: 'Least time between two progress reports of a running job', default: '500', min: 50 },
  maxBatchObjects: { env: 'JOB_MAX_BATCH_OBJECTS', doc: 'Most objects one batch may hold', default: '50000', min: 1 },
} as const satisfies Record<string, Field>;

export type QueueSettings = { readonly prefix: string } & { readonly [K in Exclude<keyof typeof QUEUE_SCHEMA, 'prefix'>]: number };

/** Parses the queue settings; throws ConfigError naming the variable. */
export function loadQueueSettings(env: Record<string, string | undefined> = process.env): QueueSettings {
  const out: Record<string, string | number> = {};
  for (const [key, field] of Object.entries(QUEUE_SCHEMA) as Array<[string, Field]>) {
    const raw = env[field.env] || field.default;
    if (field.pattern) {
      if (!field.pattern.test(raw)) throw new ConfigError(`${field.env} must match ${field.pattern}, got "${raw}"`);
      out[key] = raw;
      continue;
    }
    if (!/^\d+$/.test(raw) || Number(raw) < field.min) throw new ConfigError(`${field.env} must be an integer of at least ${field.min}, got "${raw}"`);
    out[key] = Number(raw);
  }
  return Object.freeze(out) as QueueSettings;
}
