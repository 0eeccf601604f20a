/**
 * Byte streams between threads over a MessagePort, with backpressure both ways: the sender has at
 * most WINDOW batches unacknowledged, and the receiver acknowledges a batch only when its consumer
 * asks for the next one, so a slow consumer stops the producer and memory stays flat whatever the
 * size.
 *
 * Chunks move by transfer, never by structured-clone copy. A chunk that is the whole of its own
 * ArrayBuffer (a socket read, a cipher's output) is transferred as it is; anything else (a view
 * into a larger buffer, a small Buffer from Node's shared allocation pool, which must never be
 * transferred) is copied into one of its own first. Chunks go in batches of about BATCH_BYTES,
 * one message each, so a thread is woken once per batch rather than once per 64 KiB read.
 *
 * Messages, sender to receiver: `{chunks}`, then `{end: true}` or `{error}` (plain error data).
 * Receiver to sender: `{ack: n}` for batches consumed, `{cancel: true}` when
 * it stops early. Either side closing its port, or its thread ending, ends the other's part.
 * Only the receiver closes the port: a port closed by the thread that just posted on it may lose
 * those messages on the other thread (measured: an error posted then closed never arrived).
 */
import type { MessagePort } from 'node:worker_threads';
import { errorFromData, errorToData, problem, type ErrorData } from '../errors/index.ts';

/** Bytes per message: chunks are gathered into batches of about this size. */
const BATCH_BYTES = 512 * 1024;
/** Batches a sender may have unacknowledged. */
const WINDOW = 4;

type Message = { chunks: Uint8Array[] } | { end: true } | { error: ErrorData };
type Reply = { ack: number } | { cancel: true };

/**
 * True when the bytes are the whole of an ArrayBuffer of their own, so transferring it hands over
 * these bytes and nothing else: not a view into a larger buffer, not a slice of Node's pool.
 */
export function ownsItsMemory(b: Uint8Array): boolean {
  // Not `instanceof ArrayBuffer`: a Buffer made in another realm (a vm context) is still one.
  return (
    b.byteOffset === 0 &&
    b.byteLength === b.buffer.byteLength &&
    Object.prototype.toString.call(b.buffer) === '[object ArrayBuffer]'
  );
}

/** The chunk itself when it owns its memory, else a copy that does. */
const transferable = (c: Uint8Array): Uint8Array => (ownsItsMemory(c) ? c : new Uint8Array(c));

/**
 * Sends `source` over `port` until it ends, fails (the receiver gets the error as data, and the
 * error is rethrown here) or the receiver cancels (the source is then returned, releasing it).
 */
export async function sendChunks(
  port: MessagePort,
  source: AsyncIterable<Uint8Array>,
): Promise<void> {
  let credit = WINDOW;
  let cancelled = false;
  let wake: (() => void) | null = null;
  const onReply = (r: Reply) => {
    if ('cancel' in r) cancelled = true;
    else credit += r.ack;
    wake?.();
  };
  const onClose = () => {
    cancelled = true;
    wake?.();
  };
  port.on('message', onReply);
  port.once('close', onClose);
  const post = async (chunks: Uint8Array[]) => {
    while (credit === 0 && !cancelled) await new Promise<void>((r) => (wake = r));
    wake = null;
    if (cancelled) return;
    credit--;
    port.postMessage(
      { chunks } satisfies Message,
      chunks.map((c) => c.buffer as ArrayBuffer),
    );
  };
  const it = source[Symbol.asyncIterator]();
  let batch: Uint8Array[] = [];
  let batched = 0;
  try {
    while (!cancelled) {
      const r = await it.next();
      if (r.done) break;
      if (r.value.byteLength === 0) continue;
      batch.push(transferable(r.value));
      batched += r.value.byteLength;
      if (batched >= BATCH_BYTES) {
        const full = batch;
        batch = [];
        batched = 0;
        await post(full);
      }
    }
    if (batched > 0) await post(batch);
    if (!cancelled) port.postMessage({ end: true } satisfies Message);
  } catch (err) {
    if (!cancelled) port.postMessage({ error: errorToData(err) } satisfies Message);
    throw err;
  } finally {
    port.off('message', onReply);
    port.off('close', onClose);
    if (cancelled) await it.return?.();
  }
}

/**
 * The receiving end of sendChunks as an async iterator of Buffers (views of the transferred
 * memory, no copy). Returning it early, even before the first next(), cancels the sender.
 * `fail` ends it with an error from elsewhere (the thread on the other side died).
 */
export class ChunkReceiver implements AsyncIterableIterator<Buffer> {
  #port: MessagePort;
  #queue: Array<Message | { closed: true }> = [];
  #waiting: ((m: Message | { closed: true } | { failed: unknown }) => void) | null = null;
  #failure: { failed: unknown } | null = null;
  #done = false;
  #owed = 0;
  #chunks: Uint8Array[] = [];

  constructor(port: MessagePort) {
    this.#port = port;
    port.on('message', (m: Message) => this.#deliver(m));
    port.once('close', () => this.#deliver({ closed: true }));
  }

  #deliver(m: Message | { closed: true }): void {
    if (this.#waiting) {
      const w = this.#waiting;
      this.#waiting = null;
      w(m);
    } else this.#queue.push(m);
  }

  /** Ends the stream with `err` at the next read (unless it already ended). */
  fail(err: unknown): void {
    this.#failure ??= { failed: err };
    if (this.#waiting) {
      const w = this.#waiting;
      this.#waiting = null;
      w(this.#failure);
    }
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  async next(): Promise<IteratorResult<Buffer>> {
    if (this.#done) return { done: true, value: undefined };
    if (this.#chunks.length === 0) {
      // The previous batch is consumed once the next is asked for: one more may come.
      if (this.#owed > 0) {
        this.#port.postMessage({ ack: this.#owed } satisfies Reply);
        this.#owed = 0;
      }
      const m =
        this.#queue.shift() ??
        this.#failure ??
        (await new Promise<Message | { closed: true } | { failed: unknown }>(
          (r) => (this.#waiting = r),
        ));
      if ('chunks' in m) {
        this.#owed++;
        this.#chunks = m.chunks.reverse();
      } else {
        this.#finish();
        if ('end' in m) return { done: true, value: undefined };
        if ('error' in m) throw errorFromData(m.error);
        if ('failed' in m) throw m.failed;
        throw problem('internal', 'the stream ended without its end (its thread stopped)');
      }
    }
    const c = this.#chunks.pop()!;
    return { done: false, value: Buffer.from(c.buffer, c.byteOffset, c.byteLength) };
  }

  async return(): Promise<IteratorResult<Buffer>> {
    if (!this.#done) {
      this.#port.postMessage({ cancel: true } satisfies Reply);
      this.#finish();
    }
    return { done: true, value: undefined };
  }

  #finish(): void {
    this.#done = true;
    this.#queue.length = 0;
    this.#chunks = [];
    this.#port.removeAllListeners('message');
    this.#port.close();
  }
}
