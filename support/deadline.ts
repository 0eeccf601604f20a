/**
 * Time limits that grow with the machine's load. A start-up that takes 9 s on an idle machine
 * takes a minute at load 14 on two cores; a fixed limit then fails first on a loaded machine (and
 * CI sometimes is one). Every limit of the test set-up is a base figure times `timeScale()`, and
 * every readiness wait names what did not become ready. See docs/testing.md.
 */
import { availableParallelism, loadavg } from 'node:os';

/** The largest factor a limit is stretched by: past it, something is stuck rather than slow. */
const MAX_SCALE = 8;

/**
 * How much slower than an idle machine this one runs now: the load average (the larger of the 1-
 * and 5-minute figures) per core, at least 1, at most 8. KEYWARD_TEST_TIME_SCALE sets it.
 */
export function timeScale(): number {
  const fixed = Number(process.env.KEYWARD_TEST_TIME_SCALE);
  if (Number.isFinite(fixed) && fixed > 0) return fixed;
  const [one, five] = loadavg();
  return Math.min(MAX_SCALE, Math.max(1, Math.max(one, five) / availableParallelism()));
}

/** `baseMs` stretched by the current load. */
export function scaled(baseMs: number): number {
  return Math.round(baseMs * timeScale());
}

/** The machine's state, for messages. */
export function loadNote(): string {
  const [one, five] = loadavg();
  return `load average ${one.toFixed(2)}/${five.toFixed(2)} on ${availableParallelism()} cores, time scale ${timeScale().toFixed(2)}`;
}

/** How long one start-up (a server, a browser, a worker) may take on an idle machine. */
export const READY_BASE_MS = 60_000;

/** Thrown when something did not become ready in time; its message names what. */
export class NotReadyError extends Error {}

/**
 * Resolves as `work` does, or rejects naming `what` once `timeoutMs` (by default the start-up
 * limit, scaled) passes. `work` goes on: its owner stops it when it settles (file-teardown.ts).
 */
export function withDeadline<T>(what: string, work: Promise<T>, timeoutMs = scaled(READY_BASE_MS)) {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new NotReadyError(`${what} did not become ready within ${timeoutMs} ms (${loadNote()})`),
        ),
      timeoutMs,
    );
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

/**
 * Polls `ready` every `intervalMs` until it answers true, or rejects naming `what` (and the last
 * error `ready` threw) once `timeoutMs` (by default the start-up limit, scaled) passes. A
 * NotReadyError thrown by `ready` (the process exited: it never will be) ends the wait at once.
 */
export async function waitUntilReady(
  what: string,
  ready: () => boolean | Promise<boolean>,
  opts: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<void> {
  const timeoutMs = opts.timeoutMs ?? scaled(READY_BASE_MS);
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      if (await ready()) return;
    } catch (err) {
      if (err instanceof NotReadyError) throw err;
      last = err;
    }
    if (Date.now() >= deadline)
      throw new NotReadyError(
        `${what} did not become ready within ${timeoutMs} ms (${loadNote()})${last ? `: ${(last as Error).message}` : ''}`,
      );
    // Not time.ts's sleep: time.ts imports this file.
    await new Promise((r) => setTimeout(r, opts.intervalMs ?? 50));
  }
}
