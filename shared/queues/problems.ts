/**
 * Problems of the queued jobs, and how a job's failure crosses from the worker process to the
 * API: BullMQ keeps only `failedReason` (a string), so the worker writes the problem there as
 * JSON `{code, message, status, slug, title, details}` and the API rebuilds it (conventions
 * rule 4). Messages of faults the caller cannot act on stay in the worker log.
 */
import { AppError } from '../errors/index.ts';
import type { ProblemSpec } from '../errors/index.ts';

export const JOB_PROBLEMS = {
  job_cancelled: { status: 409, slug: 'job-cancelled', title: 'Job Cancelled' },
  source_changed: { status: 409, slug: 'source-changed', title: 'Source Changed' },
  job_not_finished: { status: 409, slug: 'job-not-finished', title: 'Job Not Finished' },
} as const satisfies Record<string, ProblemSpec>;

export type JobProblemCode = keyof typeof JOB_PROBLEMS;

/** Builds the AppError for one of the job codes. */
export function jobProblem(code: JobProblemCode, message: string, details?: Record<string, unknown>): AppError {
  return new AppError(code, message, { ...JOB_PROBLEMS[code], details });
}

/** A failure as plain data, stored with the job and answered by the jobs API. */
export interface JobProblem {
  code: string;
  message: string;
  status: number;
  slug: string;
  title: string;
  details?: Record<string, unknown>;
}

/**
 * Codes whose message is safe and useful to show although their status is 5xx: an operator reads
 * "object storage unreachable during get" and knows what to fix.
 */
const OPERATIONAL = new Set(['storage_unavailable', 'queue_unavailable']);

/** The problem data of any error; unexpected faults get a generic message (the cause is logged). */
export function problemOf(err: unknown, jobId?: string): JobProblem {
  if (err instanceof AppError) {
    const visible = err.expose || OPERATIONAL.has(err.code);
    return {
      code: err.code,
      message: visible ? err.message : `the conversion failed unexpectedly; the worker log has the cause${jobId ? ` (job ${jobId})` : ''}`,
      status: err.status,
      slug: err.slug,
      title: err.title,
      ...(visible && err.details ? { details: err.details } : {}),
    };
  }
  return {
    code: 'internal',
    message: `the conversion failed unexpectedly; the worker log has the cause${jobId ? ` (job ${jobId})` : ''}`,
    status: 500,
    slug: 'internal-error',
    title: 'Internal Server Error',
  };
}

/** Serializes a problem into a job's failedReason. */
export function encodeProblem(p: JobProblem): string {
  return JSON.stringify(p);
}

/** Reads a failedReason back; reasons BullMQ wrote itself (e.g. too many stalls) become internal problems. */
export function decodeProblem(reason: string | undefined | null): JobProblem {
  if (reason) {
    try {
      const p = JSON.parse(reason) as Partial<JobProblem>;
      if (p && typeof p.code === 'string' && typeof p.status === 'number' && typeof p.slug === 'string') {
        return { code: p.code, message: String(p.message ?? p.code), status: p.status, slug: p.slug, title: String(p.title ?? 'Error'), ...(p.details ? { details: p.details } : {}) };
      }
    } catch {
      // not ours: fall through
    }
  }
  return { code: 'internal', message: reason ? `the job failed: ${reason}` : 'the job failed', status: 500, slug: 'internal-error', title: 'Internal Server Error' };
}
