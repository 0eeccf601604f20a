/**
 * The BullMQ processor of the `convert` queue: the tenant's source object streams from storage
 * through the same engine as the HTTP endpoint into an atomic put (ObjectStore.put makes the
 * result visible only when the whole stream succeeded), reporting bytes as it goes.
 *
 * How a failure ends: bad input (a problem with status < 500) and a cancel
 * throw UnrecoverableError, so the job fails at once; anything else throws a plain Error and
 * BullMQ retries it with exponential backoff. Either way the message is the problem as JSON
 * (shared/queues/problems.ts). A shutdown releases the job back to the queue untouched.
 */
import { UnrecoverableError, WaitingError, type Job } from 'bullmq';
import type { Logger } from '../../shared/logger.ts';
import { outcomeOf, type DomainMetrics, type Outcome } from '../../shared/metrics/index.ts';
import { AppError, namingTenant, problem } from '../../shared/errors/index.ts';
import type { KeyResolver } from '../../shared/pkcs7/index.ts';
import type { SignerChecker } from '../../shared/pkcs7/types.ts';
import { tenantStore, type ObjectStore } from '../../shared/storage/index.ts';
import {
  encodeProblem,
  problemOf,
  sourceVersionOf,
  type ConvertJobData,
  type ConvertJobResult,
  type ConvertProgress,
  type WrittenObject,
} from '../../shared/queues/index.ts';
import { convertObject } from './convert-object.ts';

/** The reason a worker gives when it aborts its jobs to shut down. */
export const SHUTDOWN_REASON = 'worker shutting down';
/** The reason a worker gives when the API asked to cancel a job. */
export const CANCEL_REASON = 'cancelled';

export interface ConvertDeps {
  objects: ObjectStore;
  /** The tenant's keys, decrypting as the job's submitter may (`data.decrypt`). */
  resolverFor(data: ConvertJobData): KeyResolver;
  logger: Logger;
  progressIntervalMs: number;
  /** True when the API recorded a cancel for this job id. */
  isCancelled(jobId: string): Promise<boolean>;
  /** Counts each conversion (input type, outcome, bytes, duration). */
  metrics?: Pick<DomainMetrics, 'conversion'>;
  /** Where a SignedData's signature and chain checks run (workers/signer-pool.ts); default in place. */
  checkSigners?: SignerChecker;
}

/** Reports progress at most every `intervalMs`; a failed report (Redis away) never fails the job. */
function progressReporter(
  job: Job,
  intervalMs: number,
  logger: Logger,
): { bump(): void; flush(): Promise<void>; p: ConvertProgress } {
  const p: ConvertProgress = { bytesRead: 0, bytesWritten: 0 };
  let last = 0;
  let inflight: Promise<void> | null = null;
  const send = () => {
    last = Date.now();
    inflight = job
      .updateProgress({ ...p })
      .catch((err: Error) =>
        logger.debug({ jobId: job.id, err: err.message }, 'progress report failed'),
      )
      .finally(() => {
        inflight = null;
      });
  };
  return {
    p,
    bump() {
      if (!inflight && Date.now() - last >= intervalMs) send();
    },
    async flush() {
      if (inflight) await inflight;
      send();
      await inflight;
    },
  };
}

/** Builds the processor. */
export function createConvertProcessor(deps: ConvertDeps) {
  return async function processConvert(
    job: Job<ConvertJobData, ConvertJobResult>,
    token?: string,
    signal?: AbortSignal,
  ): Promise<ConvertJobResult> {
    const { tenantId, source, sourceVersion, metadata, output } = job.data;
    const log = deps.logger.child({
      jobId: job.id,
      tenantId,
      source: source.key,
      attempt: job.attemptsMade + 1,
    });
    const started = Date.now();
    const progress = progressReporter(job, deps.progressIntervalMs, log);
    let inputType = 'unknown';
    const count = (outcome: Outcome) =>
      deps.metrics?.conversion(
        inputType,
        outcome,
        progress.p.bytesRead,
        (Date.now() - started) / 1000,
      );
    try {
      if (await deps.isCancelled(job.id!)) throw problem('job_cancelled', 'the job was cancelled');
      const objects = tenantStore(deps.objects, tenantId);
      const info = await objects.head(source.key);
      if (!info) throw problem('not_found', `the source object ${source.key} no longer exists`);
      if (sourceVersionOf(info) !== sourceVersion) {
        throw problem(
          'source_changed',
          'the source object changed after the job was submitted; submit it again to convert the new version',
          { details: { submitted: sourceVersion, current: sourceVersionOf(info) } },
        );
      }
      log.info({ size: info.size }, 'conversion started');
      const converted = await convertObject({
        objects,
        sourceKey: source.key,
        outputBase: output.key,
        metadata,
        resolver: deps.resolverFor(job.data),
        signal,
        onInputType: (type) => (inputType = type),
        onRead: (n) => {
          progress.p.bytesRead += n;
          progress.bump();
        },
        onWritten: (n) => {
          progress.p.bytesWritten += n;
          progress.bump();
        },
        ...(deps.checkSigners ? { checkSigners: deps.checkSigners } : {}),
      });
      const written: WrittenObject[] = converted.outputs.map(
        ({ role, key, size, contentType }) => ({
          role,
          key,
          size,
          contentType,
        }),
      );
      const [stored] = written;
      const key = stored.key;
      await progress.flush();
      const seconds = (Date.now() - started) / 1000;
      log.info(
        {
          output: key,
          bytesRead: progress.p.bytesRead,
          bytesWritten: stored.size,
          seconds,
          mbPerSecond: Number((progress.p.bytesRead / 1e6 / Math.max(seconds, 0.001)).toFixed(1)),
        },
        'conversion completed',
      );
      count('success');
      return {
        key,
        size: stored.size,
        contentType: stored.contentType,
        bytesRead: progress.p.bytesRead,
        objects: written,
      };
    } catch (err) {
      if (
        signal?.aborted &&
        (signal.reason === SHUTDOWN_REASON || signal.reason === CANCEL_REASON)
      ) {
        count('aborted');
        return release(job, token, signal.reason, log);
      }
      count(outcomeOf(err));
      // A key not found is named with the tenant searched: the job's.
      throw failure(job, namingTenant(err, job.data.tenantId), log);
    }
  };
}

/** A cancel fails the job for good; a shutdown puts it back in the queue for another worker. */
async function release(
  job: Job,
  token: string | undefined,
  reason: string,
  log: Logger,
): Promise<never> {
  if (reason === SHUTDOWN_REASON && token) {
    await job.moveToWait(token);
    log.warn('released the job back to the queue: this worker is shutting down');
    // BullMQ's signal that the job was moved by the processor itself.
    throw new WaitingError();
  }
  log.warn('job cancelled while running; its partial output was discarded');
  throw new UnrecoverableError(
    encodeProblem(
      problemOf(
        problem('job_cancelled', 'the job was cancelled while it ran; no output was written'),
      ),
    ),
  );
}

/** Turns an error into what BullMQ should do with the job, logging what an operator needs. */
function failure(job: Job, err: unknown, log: Logger): Error {
  const p = problemOf(err, job.id);
  const message = encodeProblem(p);
  const attempts = job.opts.attempts ?? 1;
  if (
    err instanceof AppError &&
    (err.status < 500 || (err.code === 'storage_unavailable' && err.details?.transient === false))
  ) {
    log.warn(
      { code: p.code, status: err.status, detail: p.message },
      err.status < 500
        ? 'conversion failed: bad input, not retried'
        : 'conversion failed: storage refuses the request (check bucket and credentials), not retried',
    );
    return new UnrecoverableError(message);
  }
  const last = job.attemptsMade + 1 >= attempts;
  const cause = err instanceof Error ? err.message : String(err);
  log[last ? 'error' : 'warn'](
    {
      code: p.code,
      err: cause,
      stack: p.code === 'internal' ? (err as Error)?.stack : undefined,
      attemptsLeft: attempts - job.attemptsMade - 1,
    },
    last
      ? 'conversion failed after its last attempt'
      : 'conversion failed: transient fault, will retry with backoff',
  );
  return new Error(message);
}
