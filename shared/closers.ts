/**
 * What a process opened, closed once and in order: every part that holds a
 * connection, a timer or a thread registers here when it opens, and `close()` closes them newest
 * first, so a part is closed before what it uses (the audit log before the database). The API and
 * the worker keep one list each, started by the key plane (shared/key-plane.ts).
 *
 * Idempotent as BullMQ's `Worker.close()`: a second call answers the first call's promise, so a
 * second signal, a test's `stop()` after a failed assertion, or two shutdown paths never close a
 * part twice nor race each other. A part whose close fails is logged and the rest still close.
 */
import type { Logger } from './logger.ts';

/** One part of a process that must be closed at shutdown. */
export interface Closer {
  name: string;
  close: () => Promise<unknown>;
}

/** The parts a process opened, closed newest first by `close()`. */
export class Closers {
  readonly #logger: Logger;
  readonly #last: () => Promise<void>;
  readonly #parts: Closer[] = [];
  #closing: Promise<void> | null = null;
  #closed = false;

  /** `last` runs once every part is closed (the log's flush, so the closing lines go out too). */
  constructor(logger: Logger, last: () => Promise<void> = async () => undefined) {
    this.#logger = logger;
    this.#last = last;
  }

  /**
   * Registers a part; it closes before every part registered earlier. A part registered while
   * the list is closing still closes in turn; one registered after it closed is closed at once
   * (a part built on first use during a shutdown must not outlive it).
   */
  add(name: string, close: () => Promise<unknown>): void {
    this.#parts.push({ name, close });
    if (this.#closed) void this.#closeAll();
  }

  /** Closes every part, newest first; a second call answers the first call's promise. */
  close(): Promise<void> {
    this.#closing ??= this.#closeAll().then(() => {
      this.#closed = true;
      return this.#last();
    });
    return this.#closing;
  }

  async #closeAll(): Promise<void> {
    for (let part = this.#parts.pop(); part; part = this.#parts.pop()) {
      try {
        await part.close();
        this.#logger.info({ part: part.name }, 'closed');
      } catch (err) {
        this.#logger.warn({ err: (err as Error).message, part: part.name }, 'error while closing');
      }
    }
  }
}
