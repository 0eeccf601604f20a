/**
 * Work a request starts but does not wait for (the password-reset mail): it runs after the
 * answer is written, its failures are logged (never an unhandled rejection), and shutdown waits
 * for what is under way before the database and the audit log close.
 */
import type { Logger } from '../shared/logger.ts';

export interface BackgroundTasks {
  /**
   * Runs `task` on a later turn of the event loop (setImmediate: after the current request's
   * handler has written its answer); a failure is logged under `name`. After close, not run.
   */
  run(name: string, task: () => Promise<unknown>): void;
  /** Resolves once every task started so far has ended (tests, and shutdown). */
  idle(): Promise<void>;
  /** Takes no more tasks and waits for those under way. Idempotent. */
  close(): Promise<void>;
}

/** Creates the process's background tasks. */
export function createBackgroundTasks(logger: Logger): BackgroundTasks {
  const running = new Set<Promise<void>>();
  let closed = false;

  async function idle(): Promise<void> {
    // A task may start another; wait until none is left.
    while (running.size > 0) await Promise.all(running);
  }

  return {
    run(name, task) {
      if (closed) {
        logger.warn({ task: name }, 'background task started after shutdown began; not run');
        return;
      }
      const done: Promise<void> = new Promise<void>((resolve) => setImmediate(resolve))
        .then(task)
        .then(
          () => undefined,
          (err: unknown) => {
            logger.error({ task: name, err: (err as Error)?.message }, 'background task failed');
          },
        )
        .finally(() => running.delete(done));
      running.add(done);
    },
    idle,
    close() {
      closed = true;
      return idle();
    },
  };
}
