/**
 * Waiting in tests: one `sleep` and one bounded poll. A wait for something to happen polls until
 * it holds rather than sleeping a fixed time, and its bound grows with the machine's load
 * (deadline.ts), so a shared, loaded machine makes it slower, not red.
 */
import { scaled } from '../../support/deadline.ts';

/** Resolves after `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** How long `expectEventually` polls on an idle machine when the caller names no limit. */
const EVENTUALLY_BASE_MS = 5_000;

/**
 * Runs `assertion` every `intervalMs` (20 by default) until it returns without throwing, and
 * answers what it returned; once `timeoutMs` (5 s scaled by the load, by default) has passed,
 * rethrows the assertion's last error, so the failure reads as the assertion's own message.
 */
export async function expectEventually<T>(
  assertion: () => T | Promise<T>,
  opts: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<T> {
  const deadline = Date.now() + (opts.timeoutMs ?? scaled(EVENTUALLY_BASE_MS));
  for (;;) {
    try {
      return await assertion();
    } catch (err) {
      if (Date.now() >= deadline) throw err;
    }
    await sleep(opts.intervalMs ?? 20);
  }
}
