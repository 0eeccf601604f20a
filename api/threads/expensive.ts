/**
 * The bounded place of expensive work (docs/expensive-work.md): work whose cost the caller sets
 * (PBKDF2 of a PWRI password, key-pair generation) runs here, on a piscina pool of its own
 * (EXPENSIVE_THREADS), never on the event loop and never on libuv's threads, which data-mode
 * signing uses: a tenant generating RSA-4096 pairs in a loop slows its own requests, not every
 * tenant's signatures. The tasks run synchronously on their thread (api/threads/tasks/
 * expensive.ts) for that reason: an async node:crypto call on a worker thread would queue on the
 * process's one libuv pool again.
 *
 * Each task first spends its cost of the caller's budget (429 past it), then waits for a thread
 * in this module's own queue (EXPENSIVE_MAX_QUEUE; 503 beyond it). The queue is ours rather than
 * piscina's so that a waiting task whose client has left is dropped before it starts, and its
 * cost given back.
 */
import { problem } from '../../shared/errors/index.ts';
import type { WorkBudget, WorkKind } from '../../shared/keys/work-budget.ts';
import type { WorkPool } from './pool.ts';

/** Who asks for a task, what it costs, and whether its client is still there. */
export interface WorkOrder {
  /** The audit actor of the caller, whose budget is spent; empty for system work (no budget). */
  principal: string;
  kind: WorkKind;
  cost: number;
  /** True once nobody waits for the answer (the client disconnected): dropped if not started. */
  abandoned?: () => boolean;
}

/** The place as the services see it. */
export interface ExpensiveWork {
  /** The per-principal cost budget, for expensive work that runs elsewhere (spend it first). */
  readonly budget: WorkBudget;
  /** Runs `task` of api/threads/tasks/ on the expensive pool within `order`'s budget. */
  run<T>(task: string, input: unknown, order: WorkOrder): Promise<T>;
  /** Tasks running now. */
  running(): number;
  /** Tasks waiting for a thread. */
  waiting(): number;
  /** Tasks dropped before they started because their client had left (a counter). */
  dropped(): number;
}

export interface ExpensiveWorkOptions {
  pool: WorkPool;
  budget: WorkBudget;
  /** Tasks at once: the pool's threads. */
  threads: number;
  /** Tasks waiting beyond those. */
  maxQueue: number;
}

const busy = () =>
  problem('pool_busy', 'too much expensive work is waiting (EXPENSIVE_MAX_QUEUE); retry shortly', {
    headers: { 'Retry-After': '1' },
  });

const gone = () => problem('bad_request', 'the client left before its expensive work started');

/** The place over `pool`: at most `threads` tasks in it, `maxQueue` waiting. */
export function createExpensiveWork(opts: ExpensiveWorkOptions): ExpensiveWork {
  let running = 0;
  let dropped = 0;
  const waiting: Array<{ order: WorkOrder; start(): void; drop(): void }> = [];

  /** Starts the next waiting task whose client is still there, dropping the others. */
  const next = () => {
    while (running < opts.threads && waiting.length > 0) {
      const w = waiting.shift()!;
      if (w.order.abandoned?.()) {
        dropped++;
        w.drop();
        continue;
      }
      running++;
      w.start();
    }
  };

  /** Drops every waiting task whose client has left (a full queue looks again before its 503). */
  const sweep = () => {
    for (let i = waiting.length - 1; i >= 0; i--)
      if (waiting[i].order.abandoned?.()) {
        dropped++;
        waiting.splice(i, 1)[0].drop();
      }
  };

  return {
    budget: opts.budget,
    async run<T>(task: string, input: unknown, order: WorkOrder): Promise<T> {
      if (order.abandoned?.()) throw gone();
      const refund = async () => {
        if (order.principal) await opts.budget.refund(order.principal, order.cost).catch(() => {});
      };
      if (order.principal) await opts.budget.spend(order.principal, order.kind, order.cost);
      if (running >= opts.threads) {
        if (waiting.length >= opts.maxQueue) sweep();
        if (waiting.length >= opts.maxQueue) {
          await refund();
          throw busy();
        }
        const started = await new Promise<boolean>((resolve) =>
          waiting.push({ order, start: () => resolve(true), drop: () => resolve(false) }),
        );
        if (!started) {
          await refund();
          throw gone();
        }
      } else running++;
      try {
        return await opts.pool.run<T>(task, input);
      } finally {
        running--;
        next();
      }
    },
    running: () => running,
    waiting: () => waiting.length,
    dropped: () => dropped,
  };
}
