/**
 * Tuning of the queued jobs as the queue code reads it, taken from the one configuration schema
 * (shared/config: QUEUE_PREFIX and the JOB_* variables), so the API (producer side) and
 * workers/worker.ts (consumer side) validate it at start like every other variable.
 */
import type { Config } from '../config/index.ts';

/** The queue settings. */
export interface QueueSettings {
  readonly prefix: string;
  readonly attempts: number;
  readonly backoffMs: number;
  readonly lockDurationMs: number;
  readonly stalledIntervalMs: number;
  readonly maxStalled: number;
  readonly retentionSeconds: number;
  readonly progressIntervalMs: number;
  readonly maxBatchObjects: number;
}

/** The queue settings of a validated configuration. */
export function queueSettings(config: Config): QueueSettings {
  return Object.freeze({
    prefix: config.queuePrefix,
    attempts: config.jobAttempts,
    backoffMs: config.jobBackoffMs,
    lockDurationMs: config.jobLockDurationMs,
    stalledIntervalMs: config.jobStalledIntervalMs,
    maxStalled: config.jobMaxStalled,
    retentionSeconds: config.jobRetentionSeconds,
    progressIntervalMs: config.jobProgressIntervalMs,
    maxBatchObjects: config.jobMaxBatchObjects,
  });
}
