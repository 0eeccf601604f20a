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
