/**
 * What a test file started in-process (the API, s3rver, a browser, a database) is closed when the
 * file ends, even when the `beforeAll` that started it failed or timed out before the test got
 * hold of it: an `afterAll` that calls `app?.stop()` then has nothing to stop, and a start that
 * finishes after the file has ended would otherwise keep its servers and memory in the jest worker
 * for every file after it. The environment (test/support/environment.ts) owns one list per file
 * and closes it, last started first, after the file's own `afterAll` hooks.
 */

/** One file's closers. */
export class FileTeardown {
  #entries: Array<{ name: string; close: () => Promise<void> }> = [];
  #ended = false;

  /**
   * Closes what `started` resolves to with `close` when the file ends (a failed start has nothing
   * to close). Registered after the file ended, it is closed as soon as it has started.
   */
  add<T>(name: string, started: Promise<T>, close: (value: T) => unknown): void {
    let closing: Promise<void> | undefined;
    const run = () =>
      (closing ??= started.then(
        async (value) => {
          await close(value);
        },
        () => undefined,
      ));
    if (this.#ended) void run().catch(() => undefined);
    else this.#entries.push({ name, close: run });
  }

  /**
   * Closes everything, last registered first, each within `timeoutMs` (a start still under way
   * is given that long to finish, then left to close itself when it does). Answers the problems.
   */
  async closeAll(timeoutMs: number): Promise<string[]> {
    this.#ended = true;
    const problems: string[] = [];
    for (const { name, close } of this.#entries.splice(0).reverse()) {
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<'late'>((resolve) => {
        timer = setTimeout(() => resolve('late'), timeoutMs);
      });
      try {
        const done = await Promise.race([close().then(() => 'done' as const), late]);
        if (done === 'late') problems.push(`${name}: not closed within ${timeoutMs} ms`);
      } catch (err) {
        problems.push(`${name}: ${(err as Error).message}`);
      } finally {
        clearTimeout(timer);
      }
    }
    return problems;
  }
}

const KEY = Symbol.for('keyward.test.fileTeardown');

/** The running file's list, set by the environment; absent outside jest (scripts, benches). */
export function fileTeardown(): FileTeardown | undefined {
  return (globalThis as { [KEY]?: FileTeardown })[KEY];
}

/** Gives the environment's list to a test file's global object. */
export function installFileTeardown(global: object, list: FileTeardown): void {
  (global as { [KEY]?: FileTeardown })[KEY] = list;
}

/**
 * Registers `started` to be closed with `close` when the test file ends, and answers `started`.
 * `close` must be safe to call again after the test closed the thing itself.
 */
export function closeWhenFileEnds<T>(
  name: string,
  started: Promise<T>,
  close: (value: T) => unknown,
): Promise<T> {
  fileTeardown()?.add(name, started, close);
  return started;
}

/** Wraps `close` so the second and later calls answer the first call's promise. */
export function once(close: () => Promise<void>): () => Promise<void> {
  let closing: Promise<void> | undefined;
  return () => (closing ??= close());
}
