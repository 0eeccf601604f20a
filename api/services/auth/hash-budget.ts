/**
 * The concurrency budget of password hashing that a caller without credentials can start (a
 * password reset holds only a mailed token). Beyond `limit` running and as many waiting, 503 at
 * once: such a flood then occupies at most `limit` worker threads, and logins, which hash outside
 * this budget, keep their latency.
 */
import { problem } from '../../../shared/errors/index.ts';

export interface HashBudget {
  /** Runs `work` within the budget, or throws the 503 pool_busy problem when it is full. */
  run<T>(work: () => Promise<T>): Promise<T>;
  /** Hashes running now. */
  running(): number;
}

/** A budget of `limit` concurrent hashes with as many waiting. */
export function createHashBudget(limit: number, maxWaiting = limit): HashBudget {
  let running = 0;
  const waiting: Array<() => void> = [];
  const release = () => {
    const next = waiting.shift();
    if (next) next();
    else running -= 1;
  };
  return {
    async run(work) {
      if (running >= limit) {
        if (waiting.length >= maxWaiting)
          throw problem('pool_busy', 'too many password operations in progress; retry shortly', {
            headers: { 'Retry-After': '1' },
          });
        // The releasing hash hands its slot over: `running` stays the same.
        await new Promise<void>((resolve) => waiting.push(resolve));
      } else running += 1;
      try {
        return await work();
      } finally {
        release();
      }
    },
    running: () => running,
  };
}
