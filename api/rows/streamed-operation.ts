/**
 * The one wrapper of the stream endpoints (analyze, convert, re-encrypt, re-sign, uploads):
 * timing, byte counts in and out, abandoning the request on failure (a multipart form stops
 * reading ahead, a raw body is discarded and the client asked to close, so the problem still
 * reaches it; a response already begun is cut by the error handler, never left half-written),
 * and one log line and one audit event per operation, success or failure.
 */
import type { Request, Response } from 'express';
import type { AppContext } from '../context.ts';
import { AppError } from '../../shared/errors/index.ts';
import { actorOf } from '../access/checks.ts';
import { clientGone } from '../http/access-log.ts';
import { outcomeOf } from '../../shared/metrics/index.ts';
import { abandonRaw } from '../http/streaming.ts';
import { counted } from '../../shared/streams.ts';
import type { StreamingForm } from '../http/streaming-multipart.ts';

/** The actions a streamed operation reports under. */
export type StreamedAction =
  | 'migration.analyze'
  | 'migration.convert'
  | 'migration.upload'
  | 'crypto.stream.reencrypt'
  | 'crypto.stream.resign';

/** What the operation body fills in as it goes; the wrapper reads it when the body ends or fails. */
export interface OperationState {
  bytesIn: number;
  bytesOut: number;
  /** The audit target (a kid, an object key). */
  target: string | null;
  /** Extra members of the log line and audit details. */
  details: Record<string, unknown>;
  /** The multipart form being read, so a failure abandons it rather than the raw request. */
  form: StreamingForm | null;
  /** Counts the bytes of the input as they flow. */
  countIn(it: AsyncIterable<Buffer>): AsyncIterable<Buffer>;
}

/**
 * Runs one stream operation, the body of a stream endpoint's route row (its input checked, the
 * request's body unread): `run` reads the request and writes the answer.
 */
export async function streamedOperation(
  ctx: AppContext,
  { req, res }: { req: Request; res: Response },
  action: StreamedAction,
  run: (op: OperationState) => Promise<void>,
): Promise<void> {
  const started = performance.now();
  const op: OperationState = {
    bytesIn: 0,
    bytesOut: 0,
    target: null,
    details: {},
    form: null,
    countIn: (it) => counted(it, (n) => (op.bytesIn += n)),
  };
  try {
    await run(op);
  } catch (err) {
    if (op.form) op.form.abandon(res);
    else abandonRaw(req, res);
    report(ctx, req, action, started, op, { err, cut: res.headersSent });
    throw err;
  }
  report(ctx, req, action, started, op);
}

/**
 * One log line per operation with bytes, duration and throughput (what operators size capacity
 * with), and one audit event in the caller's tenant with the actor and the outcome.
 */
function report(
  ctx: AppContext,
  req: Request,
  action: StreamedAction,
  started: number,
  op: OperationState,
  failure?: { err: unknown; cut: boolean },
): void {
  const err = failure?.err;
  const ms = performance.now() - started;
  const mbps = ms > 0 ? Number((op.bytesIn / 1e6 / (ms / 1000)).toFixed(1)) : 0;
  const code = err instanceof AppError ? err.code : err ? 'internal' : undefined;
  const outcome = err ? 'failure' : 'success';
  // A failure says whether the answer had begun (and was cut) or the client got a problem.
  const details = failure ? { ...op.details, cut: failure.cut } : op.details;
  const line = {
    op: action,
    tenantId: req.auth.tenantId,
    outcome,
    bytesIn: op.bytesIn,
    bytesOut: op.bytesOut,
    ms: Math.round(ms),
    mbps,
    ...(code ? { code } : {}),
    ...details,
  };
  // A client that left mid-stream is no failure of ours: said at info, with what had passed.
  const aborted = err !== undefined && clientGone(req);
  if (aborted) req.log.info({ ...line, aborted: true }, `${action} aborted by the client`);
  else if (err && !(err instanceof AppError && err.expose)) req.log.warn(line, `${action} failed`);
  else req.log.info(line, `${action} ${outcome}`);
  if (action === 'migration.convert') {
    const inputType = typeof op.details.inputType === 'string' ? op.details.inputType : 'unknown';
    ctx.metrics.domain.conversion(
      inputType,
      aborted ? 'aborted' : outcomeOf(err),
      op.bytesIn,
      ms / 1000,
    );
  }
  ctx.audit.record({
    tenantId: req.auth.tenantId,
    actor: actorOf(req),
    action,
    outcome,
    target: op.target,
    details: {
      bytesIn: op.bytesIn,
      bytesOut: op.bytesOut,
      ms: Math.round(ms),
      requestId: req.id,
      ...(code ? { code } : {}),
      ...details,
    },
  });
}
