import { conversionRunner } from '../../../api/threads/conversions.ts';
import type { WorkPool } from '../../../api/threads/pool.ts';
import { problem } from '../../../shared/errors/index.ts';
import type { KeyResolver } from '../../../shared/pkcs7/index.ts';

const resolver: KeyResolver = { byKid: async () => null, byCmsRef: async () => null };

/** A pool that only counts its tasks and answers each with a full queue. */
function countingPool(): WorkPool & { calls: number } {
  const pool = {
    calls: 0,
    async run<T>(): Promise<T> {
      pool.calls++;
      throw problem('pool_busy', 'the conversion pool is saturated; retry shortly');
    },
    utilization: () => 0,
    queueSize: () => 0,
    threads: () => 0,
    open: () => true,
    close: async () => {},
  };
  return pool;
}

async function* garbage(wait?: Promise<void>): AsyncGenerator<Buffer> {
  await wait;
  yield Buffer.from('not a CMS object at all');
}

describe('where a conversion runs', () => {
  it('when a conversion runs alone, then it keeps the event loop; one started beside it goes to a thread; once it has ended the next is alone again', async () => {
    const pool = countingPool();
    const runner = conversionRunner(pool, 2);
    let release!: () => void;
    const first = runner.convert(garbage(new Promise<void>((r) => (release = r))), {
      metadata: {},
      resolver,
    });
    await expect(runner.convert(garbage(), { metadata: {}, resolver })).rejects.toMatchObject({
      code: 'pool_busy',
    });
    expect(pool.calls).toBe(1);
    release();
    await expect(first).rejects.toMatchObject({ code: 'cms_malformed' });
    await expect(runner.convert(garbage(), { metadata: {}, resolver })).rejects.toMatchObject({
      code: 'cms_malformed',
    });
    expect(pool.calls).toBe(1);
  });

  it('when CONVERT_THREAD_FROM is 1, then even a conversion alone goes to a thread', async () => {
    const pool = countingPool();
    await expect(
      conversionRunner(pool, 1).convert(garbage(), { metadata: {}, resolver }),
    ).rejects.toMatchObject({ code: 'pool_busy' });
    expect(pool.calls).toBe(1);
  });
});
