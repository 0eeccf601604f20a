/** Bounded concurrency over a list: what a batch of small I/O calls needs, declared once. */

/** Runs `fn` over `items`, at most `limit` at once, in order of start; rejects with the first failure. */
export async function eachLimited<T>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) await fn(items[next++]);
    }),
  );
}

/**
 * Work started in order with at most `limit` unfinished at once, each result taken in the order
 * it was started: what a stream of small writes needs when the next one should not wait for the
 * last, yet the answer must list them as they came.
 */
export class InOrder<T> {
  readonly #limit: number;
  readonly #take: (result: T) => void;
  readonly #pending: Promise<T>[] = [];

  /** `take` receives each result, in start order. */
  constructor(limit: number, take: (result: T) => void) {
    this.#limit = limit;
    this.#take = take;
  }

  /** How many are started and not yet taken. */
  get size(): number {
    return this.#pending.length;
  }

  /** Starts `task` once fewer than `limit` are unfinished, taking the oldest results to make room. */
  async add(task: () => Promise<T>): Promise<void> {
    while (this.#pending.length >= this.#limit) await this.#takeOldest();
    const started = task();
    // Awaited in its turn; until then a failure must not count as unhandled.
    started.catch(() => {});
    this.#pending.push(started);
  }

  /** Takes every result still to come. */
  async drain(): Promise<void> {
    while (this.#pending.length > 0) await this.#takeOldest();
  }

  /**
   * After a failure elsewhere: waits for everything started (nothing runs on after it), takes what
   * succeeded, and answers the earliest failure among them, if any.
   */
  async settle(): Promise<unknown> {
    let failure: unknown;
    for (const r of await Promise.allSettled(this.#pending.splice(0)))
      if (r.status === 'fulfilled') this.#take(r.value);
      else failure ??= r.reason;
    return failure;
  }

  /** The oldest result, taken; its failure settles the rest first, so nothing is left running. */
  async #takeOldest(): Promise<void> {
    let result: T;
    try {
      result = await this.#pending.shift()!;
    } catch (err) {
      await this.settle();
      throw err;
    }
    this.#take(result);
  }
}
