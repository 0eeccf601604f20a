/**
 * Deadlines on request bodies, for Express and the runtime lane alike: Node's own
 * requestTimeout is off (it would cut streaming uploads of any size), so without these a client
 * that announces a body and stops sending holds its connection, and a reader's promise, forever.
 * - Idle: no byte for `idleMs` while the service waits for one answers 408 and closes. Time the
 *   service itself stalls the client (a paused request, a full buffer nobody reads yet) is not
 *   counted, so backpressure from a slow conversion never passes for an idle client.
 * - Overall: a body still arriving `overallMs` after its request began answers 408 the same way,
 *   unless a streaming reader took the request (streamsBody): uploads may take as long as they
 *   take while bytes flow.
 * One timer sweeps every watched request (as Node's connectionsCheckingInterval does for
 * headersTimeout), so a request pays a Set insertion, not timers of its own. The 408 is the
 * waiting reader's failure (onBodyTimeout), so each route answers it in its own shape (problem
 * or OAuth); with no reader waiting the connection gets a bare 408 and closes.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { problem, type AppError } from '../../shared/errors/index.ts';

interface Watch {
  req: IncomingMessage;
  res: ServerResponse;
  started: number;
  lastRead: number;
  quietSince: number;
  streaming: boolean;
  fail: ((err: AppError) => void) | null;
}

const WATCH = Symbol('body deadline');
type Watched = IncomingMessage & { [WATCH]?: Watch };

/**
 * Registers what a body reader does when the body's deadline passes (reject with the 408);
 * returns the call that unregisters it, for when the reader is done.
 */
export function onBodyTimeout(req: IncomingMessage, fail: (err: AppError) => void): () => void {
  const watch = (req as Watched)[WATCH];
  if (!watch) return () => undefined;
  watch.fail = fail;
  return () => {
    if (watch.fail === fail) watch.fail = null;
  };
}

/** Marks a request as a streaming upload: the idle deadline holds, the overall one does not. */
export function streamsBody(req: IncomingMessage): void {
  const watch = (req as Watched)[WATCH];
  if (watch) watch.streaming = true;
}

/**
 * A body read as an iterable, whose pending read fails with the 408 when the body's deadline
 * passes (the raw streaming bodies, read with req.iterator, have no listener of their own to fail).
 */
export async function* untilBodyTimeout(
  req: IncomingMessage,
  body: AsyncIterable<Buffer>,
): AsyncGenerator<Buffer> {
  let fail: (err: AppError) => void = () => undefined;
  const timedOut = new Promise<never>((_, reject) => (fail = reject));
  timedOut.catch(() => undefined);
  const off = onBodyTimeout(req, fail);
  const it = body[Symbol.asyncIterator]();
  try {
    for (;;) {
      const r = await Promise.race([it.next(), timedOut]);
      if (r.done) return;
      yield r.value;
    }
  } finally {
    off();
    await it.return?.();
  }
}

/** Whether the service, not the client, is why no byte arrives: the body waits to be read. */
const heldByUs = (req: IncomingMessage): boolean =>
  req.isPaused() || req.readableLength >= req.readableHighWaterMark;

/** What Node itself answers when headersTimeout passes; here when a body stalls with no reader waiting. */
const BARE_408 = 'HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n';

export interface BodyDeadlineOptions {
  idleMs: number;
  overallMs: number;
}

/** The deadlines of one server: watch(req, res) on each request, start() when it listens, stop() at close. */
export class BodyDeadlines {
  readonly #watches = new Set<Watch>();
  readonly #idleMs: number;
  readonly #overallMs: number;
  #timer: NodeJS.Timeout | null = null;

  constructor(opts: BodyDeadlineOptions) {
    this.#idleMs = opts.idleMs;
    this.#overallMs = opts.overallMs;
  }

  /** Watches a request that carries a body, until the body has arrived. */
  watch(req: IncomingMessage, res: ServerResponse): void {
    if (req.complete) return;
    const now = performance.now();
    const watch: Watch = {
      req,
      res,
      started: now,
      lastRead: req.socket.bytesRead,
      quietSince: now,
      streaming: false,
      fail: null,
    };
    (req as Watched)[WATCH] = watch;
    this.#watches.add(watch);
  }

  /** Starts the sweep: a quarter of the shorter deadline, so a deadline is overshot by at most that. */
  start(): void {
    const every = Math.max(25, Math.min(1000, Math.min(this.#idleMs, this.#overallMs) / 4));
    this.#timer ??= setInterval(() => this.#sweep(), every).unref();
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
  }

  #sweep(): void {
    const now = performance.now();
    for (const w of this.#watches) {
      const { req } = w;
      if (req.complete || req.socket === null || req.socket.destroyed) {
        this.#watches.delete(w);
        continue;
      }
      const read = req.socket.bytesRead;
      if (read !== w.lastRead || heldByUs(req)) {
        w.lastRead = read;
        w.quietSince = now;
      }
      if (now - w.quietSince >= this.#idleMs)
        this.#expire(w, `no byte of the request body arrived for ${this.#idleMs / 1000} s`);
      else if (!w.streaming && now - w.started >= this.#overallMs)
        this.#expire(w, `the request body took longer than ${this.#overallMs / 1000} s`);
    }
  }

  #expire(w: Watch, why: string): void {
    this.#watches.delete(w);
    const { req, res } = w;
    const socket = req.socket;
    // Whatever the route does with the failure, the connection does not outlive another period.
    setTimeout(() => socket.destroy(), this.#idleMs).unref();
    if (w.fail && !res.headersSent) {
      w.fail(problem('request_timeout', why, { headers: { Connection: 'close' } }));
    } else if (!res.headersSent) {
      socket.end(BARE_408);
    } else {
      // An answer already went out (a refusal, a streamed result): nothing more can be said.
      socket.destroy();
    }
  }
}
