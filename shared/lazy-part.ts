/**
 * A part of a process started on its first use, because what it needs may be away at start (the
 * job queues need Redis, the object store S3): one start at a time, and a failed start is
 * forgotten so that the next use tries again. The process's context holds each such part, built
 * with the others, so nothing of the process is made outside the place that builds it.
 */
export class LazyPart<T> {
  readonly #start: () => Promise<T>;
  #made: Promise<T> | undefined;

  constructor(start: () => Promise<T>) {
    this.#start = start;
  }

  /** The part, started now if it is not already. */
  get(): Promise<T> {
    if (!this.#made) {
      const made = this.#start();
      this.#made = made;
      made.catch(() => {
        if (this.#made === made) this.#made = undefined;
      });
    }
    return this.#made;
  }
}
