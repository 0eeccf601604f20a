/**
 * The HTTP edge shared by the streaming endpoints (migration and crypto/stream): content
 * negotiation, raw request bodies as byte streams, the pre-buffered streamed answer
 * (docs/decisions.md, "Failures that tell nothing"). The operation around them is
 * ./streamed-operation.ts.
 */
import { pipeline } from 'node:stream/promises';
import type { Request, RequestHandler, Response } from 'express';
import { problem } from '../../shared/errors/index.ts';
import { streamsBody, untilBodyTimeout } from './body-deadline.ts';

export const PROBLEM_JSON = 'application/problem+json';

/**
 * Proactive negotiation before any work (RFC 9110 section 12.5.1): a client whose Accept admits
 * none of the endpoint's result types nor problem+json gets 406 before its body is read.
 */
export function acceptOneOf(types: readonly string[]): RequestHandler {
  const all = [...types, PROBLEM_JSON];
  return (req, _res, next) => {
    if (!req.accepts(all)) {
      throw problem(
        'not_acceptable',
        `this endpoint answers ${all.join(', ')}; the Accept header admits none of them`,
        { details: { acceptable: all } },
      );
    }
    next();
  };
}

/**
 * The service's "optional request header [that] selects the response content type", named
 * X-Response-Content-Type here: an enumeration of the endpoint's response types whose default,
 * application/problem+json, constrains nothing (the input decides, errors are problems). Any
 * other value is an assertion about the result: when the input converts to another type the
 * answer is 406 before any output.
 */
export const RESPONSE_TYPE_HEADER = 'x-response-content-type';

/** Checks the selection header against the endpoint's enumeration (400 for a value outside it). */
export function responseSelection(types: readonly string[]): RequestHandler {
  const all = [PROBLEM_JSON, ...types];
  return (req, _res, next) => {
    const v = req.headers[RESPONSE_TYPE_HEADER];
    if (v !== undefined && (typeof v !== 'string' || !all.includes(v.trim().toLowerCase()))) {
      throw problem(
        'validation_failed',
        `X-Response-Content-Type must be one of ${all.join(', ')}`,
      );
    }
    next();
  };
}

/**
 * The media type to label a result with: one of `candidates` (the types this result can be
 * served as, best first) that both the selection header and Accept admit; 406 when none is
 * (an Accept admitting application/problem+json admits any result, see below).
 */
export function labelFor(req: Request, candidates: readonly string[]): string {
  const selected = (req.headers[RESPONSE_TYPE_HEADER] as string | undefined)?.trim().toLowerCase();
  const base = (t: string) => t.split(';')[0].trim();
  let pool = [...candidates];
  if (selected && selected !== PROBLEM_JSON) pool = pool.filter((t) => base(t) === selected);
  const chosen = pool.length ? req.accepts(pool.map(base)) : false;
  if (chosen) return pool.find((t) => base(t) === chosen)!;
  // The selection header defaults to application/problem+json, so a generated client sends that
  // as its Accept and means "whatever the result is, errors as problems": not a reason for 406.
  if (pool.length && req.accepts(PROBLEM_JSON)) return pool[0];
  throw problem(
    'not_acceptable',
    `this input converts to ${candidates.map(base).join(' or ')}, which the request does not accept`,
    {
      details: { available: candidates.map(base) },
    },
  );
}

/**
 * The raw request body as a byte stream that a consumer may stop early without killing the
 * socket. It may take as long as it needs, but a pause past the idle deadline fails the read.
 */
export function rawBody(req: Request): AsyncIterable<Buffer> {
  streamsBody(req);
  return untilBodyTimeout(req, req.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>);
}

/** After a failure on a raw body: ask the client to close and discard what it still sends. */
export function abandonRaw(req: Request, res: Response): void {
  if (req.complete) return;
  if (!res.headersSent) res.setHeader('Connection', 'close');
  req.resume();
}

/**
 * Holds the last chunk of `body` back until `check` passes, so a check that fails after the
 * content (an unexpected extra part) cuts the response before its closing delimiter.
 */
export async function* checkedBeforeLast(
  body: AsyncIterable<Buffer>,
  check: () => Promise<void>,
): AsyncGenerator<Buffer> {
  let last: Buffer | null = null;
  for await (const c of body) {
    if (last) yield last;
    last = c;
  }
  await check();
  if (last) yield last;
}

/** Output held before the status line: small bad inputs still get a problem. */
export const PRE_BUFFER_BYTES = 64 * 1024;

/**
 * Answers 200 with a streamed body. The first PRE_BUFFER_BYTES of output (or all of it, when
 * shorter) are produced before the headers, so any failure up to there is still a problem
 * response; later failures cut the connection (pipeline destroys the response), and a slow
 * client slows the producer through pipeline's backpressure. `sent.bytesOut` grows as the
 * response takes each piece, so an answer cut midway (the producer failed, the client left)
 * still reports what had left: the audit said 0 for one cut after 261 KB of its 300 KB.
 */
export async function sendStreamed(
  res: Response,
  contentType: string,
  body: AsyncIterable<Buffer>,
  sent: { bytesOut: number },
): Promise<void> {
  const it = body[Symbol.asyncIterator]();
  const held: Buffer[] = [];
  let heldBytes = 0;
  let done = false;
  try {
    while (heldBytes < PRE_BUFFER_BYTES) {
      const r = await it.next();
      if (r.done) {
        done = true;
        break;
      }
      held.push(r.value);
      heldBytes += r.value.length;
    }
  } catch (err) {
    await it.return?.();
    throw err;
  }
  res.status(200).setHeader('Content-Type', contentType);
  res.setHeader('Cache-Control', 'no-store');
  if (done) {
    res.setHeader('Content-Length', String(heldBytes));
    res.end(Buffer.concat(held));
    sent.bytesOut += heldBytes;
    return;
  }
  let exhausted = false;
  async function* rest(): AsyncGenerator<Buffer> {
    // A piece counts once the response has taken it: pipeline asks for the next one only after
    // its write returned (and, under backpressure, drained).
    let yielded = 0;
    try {
      for (const c of held.splice(0)) {
        yielded = c.length;
        yield c;
        sent.bytesOut += yielded;
      }
      for (;;) {
        const r = await it.next();
        if (r.done) {
          exhausted = true;
          return;
        }
        yielded = r.value.length;
        yield r.value;
        sent.bytesOut += yielded;
      }
    } finally {
      if (!exhausted) {
        // Cut: what the response still holds (its own buffer and the socket's) is dropped with
        // it, so only what reached the kernel is counted.
        sent.bytesOut = Math.max(0, sent.bytesOut - res.writableLength);
        // The client went away or a write failed: stop the producer and release its input.
        await it.return?.();
      }
    }
  }
  await pipeline(rest(), res);
}
