/**
 * jest's time limits for this file, stretched by the machine's load when the file starts
 * (deadline.ts): a test's default limit is 60 s on an idle machine, a hook's at least 120 s (a
 * `beforeAll` starts servers, a database, a browser), and a limit a file gives a hook or a test
 * (`test(name, fn, 30_000)`) grows by the same factor. On an idle machine (factor 1) every figure
 * stays as written.
 */
import { jest } from '@jest/globals';
import { timeScale } from '../../support/deadline.ts';

/** A test's limit on an idle machine (jest.config.js testTimeout). */
const TEST_BASE_MS = 60_000;
/** The least a hook may take on an idle machine: set-up starts things, and they are slow first. */
const HOOK_BASE_MS = 120_000;

const scale = timeScale();
jest.setTimeout(Math.round(TEST_BASE_MS * scale));

type Hook = (fn: (...args: never[]) => unknown, timeout?: number) => void;
const hooks = globalThis as unknown as Record<
  'beforeAll' | 'afterAll' | 'beforeEach' | 'afterEach',
  Hook
>;
for (const name of ['beforeAll', 'afterAll', 'beforeEach', 'afterEach'] as const) {
  const original = hooks[name];
  hooks[name] = (fn, timeout) =>
    original(fn, Math.round(Math.max(timeout ?? 0, HOOK_BASE_MS) * scale));
}

// A plain `test(name, fn, timeout)` / `it(...)`; their variants (each, only, concurrent, ...) pass
// through unchanged and keep the scaled default.
type TestFn = (name: unknown, fn?: unknown, timeout?: number) => void;
const tests = globalThis as unknown as Record<'test' | 'it', TestFn>;
for (const name of ['test', 'it'] as const) {
  tests[name] = new Proxy(tests[name], {
    apply: (target, self, args: Parameters<TestFn>) =>
      Reflect.apply(
        target,
        self,
        typeof args[2] === 'number' ? [args[0], args[1], Math.round(args[2] * scale)] : args,
      ),
  });
}
