/**
 * The BullMQ processor of the `convert` queue: the tenant's source object streams from storage
 * through the same engine as the HTTP endpoint into an atomic put (ObjectStore.put makes the
 * result visible only when the whole stream succeeded), reporting bytes as it goes.
 *
 * How a failure ends (conventions rule 7): bad input (a problem with status < 500) and a cancel
 * throw UnrecoverableError, so the job fails at once; anything else throws a plain Error and
 * BullMQ retries it with exponential backoff. Either way the message is the problem as JSON
 * (shared/queues/problems.ts). A shutdown releases the job back to the queue untouched.
 */
import { UnrecoverableError, WaitingError, type Job } from 'bullmq';
import type { Logger } from '../../shared/logger.ts';
import { outcomeOf, type DomainMetrics, type Outcome } from '../../shared/metrics/index.ts';
import { AppError, namingTenant, problem } from '../../shared/errors/index.ts';
import {
  convertPkcs7ToJose,
  type ConvertMetadata,
  type KeyResolver,
} from '../../shared/pkcs7/index.ts';
import type { SignerChecker } from '../../shared/pkcs7/types.ts';
import { tenantStore, type ObjectStore } from '../../shared/storage/index.ts';
import { MixedReader, mixedBoundary } from '../../shared/jose/mixed-reader.ts';
import { counted } from '../../shared/streams.ts';
import {
  CONTENT_EXTENSION,
  encodeProblem,
  problemOf,
  resultExtension,
  sourceVersionOf,
  type ConvertJobData,
  type ConvertJobResult,
  type ConvertProgress,
  type WrittenObject,
} from '../../shared/queues/index.ts';

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
      const input = await objects.get(source.key);
      signal?.addEventListener('abort', () => input.destroy(), { once: true });
      const result = await convertPkcs7ToJose(
        counted(input, (n) => {
          progress.p.bytesRead += n;
          progress.bump();
        }),
        {
          metadata: metadata as ConvertMetadata,
          resolver: deps.resolverFor(job.data),
          onInputType: (type) => (inputType = type),
          // A SignedData's content is stored beside its JWS, so nothing of the input is lost.
          withContent: true,
          ...(deps.checkSigners ? { checkSigners: deps.checkSigners } : {}),
        },
      );
      const body = counted(result.body, (n) => {
        progress.p.bytesWritten += n;
        progress.bump();
      });
      const written =
        inputType === 'signedData'
          ? await putSignedWithContent(objects, output.key, result.contentType, body, signal)
          : [
              {
                role: 'result' as const,
                key: output.key + resultExtension(result.contentType),
                contentType: result.contentType,
                size: (
                  await objects.put(output.key + resultExtension(result.contentType), body, {
                    contentType: result.contentType,
                    signal,
                  })
                ).size,
              },
            ];
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

async function* once(b: Buffer): AsyncGenerator<Buffer> {
  yield b;
}

/**
 * Splits a SignedData's answer (multipart/mixed: the content, then the JWS) into `<key>.content`
 * and `<key>.jws.json`. The content object's stream ends only after the JWS part was read, i.e.
 * after the CMS signature verified, so a bad signature leaves no content object (the put of an
 * unfinished stream is never made visible); the JWS is written last.
 */
async function putSignedWithContent(
  objects: ObjectStore,
  base: string,
  contentType: string,
  body: AsyncIterable<Buffer>,
  signal: AbortSignal | undefined,
): Promise<WrittenObject[]> {
  const boundary = mixedBoundary(contentType);
  if (!boundary) throw new Error(`a SignedData conversion answered ${contentType}`);
  const reader = new MixedReader(body, boundary);
  try {
    const content = await reader.next();
    if (!content || content.contentType !== 'application/octet-stream')
      throw new Error('the SignedData answer does not start with its content');
    let jws: Buffer | null = null;
    const contentThenJws = (async function* () {
      yield* content.body;
      const part = await reader.nextSmall(MAX_JWS_BYTES);
      if (!part || part.contentType !== 'application/jose+json' || (await reader.next()))
        throw new Error('the SignedData answer does not end with its JWS');
      jws = part.data;
    })();
    const contentKey = base + CONTENT_EXTENSION;
    const c = await objects.put(contentKey, contentThenJws, {
      contentType: 'application/octet-stream',
      signal,
    });
    const jwsKey = base + resultExtension('application/octet-stream');
    const j = await objects.put(jwsKey, once(jws!), {
      contentType: 'application/octet-stream',
      signal,
    });
    return [
      { role: 'result', key: jwsKey, size: j.size, contentType: 'application/octet-stream' },
      { role: 'content', key: contentKey, size: c.size, contentType: 'application/octet-stream' },
    ];
  } catch (err) {
    await reader.close().catch(() => {});
    throw err;
  }
}

/** A JWS object is a few kilobytes (an EdDSA or RSA-4096 signature and a small header). */
const MAX_JWS_BYTES = 64 * 1024;

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
