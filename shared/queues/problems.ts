/**
 * How a job's failure crosses from the worker process to the API: BullMQ keeps only
 * `failedReason` (a string), so the worker writes the error there as JSON `{code, message,
 * details}` and the API rebuilds it by code from the catalogue and renders
 * it as every other problem (shared/errors/index.ts problemDocument). Messages of faults the caller cannot act
 * on stay in the worker log. The job codes themselves are rows of the catalogue (area jobs).
 */
import { AppError, errorFromData, type ErrorData, problem } from '../errors/index.ts';

/**
 * Codes whose message is safe and useful to show although their status is 5xx: an operator reads
 * "object storage unreachable during get" and knows what to fix.
 */
const OPERATIONAL = new Set<string>(['storage_unavailable', 'queue_unavailable']);

/** The message of a fault the caller cannot act on; the cause is in the worker log. */
const unexpected = (jobId?: string) =>
  `the conversion failed unexpectedly; the worker log has the cause${jobId ? ` (job ${jobId})` : ''}`;

/** The error of a failed job as the plain data stored with it, its message made safe to show. */
export function problemOf(err: unknown, jobId?: string): ErrorData {
  if (err instanceof AppError) {
    const visible = err.expose || OPERATIONAL.has(err.code);
    return {
      code: err.code,
      message: visible ? err.message : unexpected(jobId),
      ...(visible && err.details ? { details: err.details } : {}),
    };
  }
  return { code: 'internal', message: unexpected(jobId) };
}

/** Serializes a problem into a job's failedReason. */
export function encodeProblem(p: ErrorData): string {
  return JSON.stringify({
    code: p.code,
    message: p.message,
    ...(p.details ? { details: p.details } : {}),
  });
}

/** Codes of earlier releases that the one catalogue merged into another. */
const RENAMED_CODES = new Map([['cms_decryption_failed', 'decryption_failed']]);

/**
 * Reads a failedReason back as the error it was, rebuilt by code. Reasons BullMQ wrote itself
 * (e.g. too many stalls) and codes the catalogue does not hold become internal problems that
 * still say what BullMQ said.
 */
export function decodeProblem(reason: string | undefined | null): AppError {
  if (reason) {
    try {
      const data: unknown = JSON.parse(reason);
      // Failed jobs outlive an upgrade (JOB_RETENTION_SECONDS): a code the catalogue merged reads as its successor.
      const renamed =
        data && typeof data === 'object'
          ? RENAMED_CODES.get(String((data as ErrorData).code))
          : undefined;
      const error = errorFromData(renamed ? { ...(data as ErrorData), code: renamed } : data);
      if (error.code !== 'internal' || (data as ErrorData).code === 'internal') return error;
    } catch {
      // not ours: fall through
    }
  }
  return problem('internal', reason ? `the job failed: ${reason}` : 'the job failed');
}
