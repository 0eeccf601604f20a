/**
 * The byte-stream and bounded-work helpers the upload path stands on: holdHead (a small input
 * known whole before it is used, a large one streamed from its first chunk) and InOrder (work
 * started in order, a bounded number at once, results taken in that order, nothing left running
 * after a failure).
 */
import { InOrder } from '../../shared/each-limited.ts';
import { holdHead } from '../../shared/streams.ts';

async function* chunks(...sizes: number[]): AsyncGenerator<Buffer> {
  let n = 0;
  for (const size of sizes) yield Buffer.alloc(size, n++);
}

async function all(source: AsyncIterable<Buffer>): Promise<Buffer> {
  const out: Buffer[] = [];
  for await (const c of source) out.push(c);
  return Buffer.concat(out);
}

const later = <T>(ms: number, value: T) =>
  new Promise<T>((resolve) => setTimeout(() => resolve(value), ms));

describe('holdHead', () => {
  it('when the source ends within the limit, then it is held whole and streams the same bytes again', async () => {
    const head = await holdHead(chunks(3, 4), 10);
    expect(head.whole).toBe(true);
    expect(head.bytes).toBe(7);
    expect(await all(head.stream)).toEqual(await all(chunks(3, 4)));
  });

  it('when the source is longer than the limit, then only its start is read and the stream still gives all of it', async () => {
    let pulled = 0;
    async function* counting(): AsyncGenerator<Buffer> {
      for await (const c of chunks(4, 4, 4, 4, 4)) {
        pulled += 1;
        yield c;
      }
    }
    const head = await holdHead(counting(), 6);
    expect(head.whole).toBe(false);
    expect(head.bytes).toBe(8);
    expect(pulled).toBe(2);
    expect(await all(head.stream)).toEqual(await all(chunks(4, 4, 4, 4, 4)));
  });

  it('when the source is empty, then it is whole with no bytes', async () => {
    const head = await holdHead(chunks(), 10);
    expect(head).toMatchObject({ whole: true, bytes: 0, chunks: [] });
  });
});

describe('InOrder', () => {
  it('when tasks finish out of order, then results are taken in start order and no more than the limit run at once', async () => {
    const taken: number[] = [];
    let running = 0;
    let most = 0;
    const work = new InOrder<number>(3, (n) => taken.push(n));
    for (const [i, ms] of [30, 5, 20, 1, 10, 2].entries())
      await work.add(async () => {
        most = Math.max(most, ++running);
        await later(ms, null);
        running -= 1;
        return i;
      });
    await work.drain();
    expect(taken).toEqual([0, 1, 2, 3, 4, 5]);
    expect(most).toBe(3);
    expect(work.size).toBe(0);
  });

  it('when a task fails, then the tasks started after it end before the failure is thrown, and what succeeded is taken', async () => {
    const taken: number[] = [];
    let ended = 0;
    const work = new InOrder<number>(4, (n) => taken.push(n));
    await work.add(() => later(5, 0).finally(() => (ended += 1)));
    await work.add(() => later(1, 1).then(() => Promise.reject(new Error('second'))));
    await work.add(() => later(20, 2).finally(() => (ended += 1)));
    await expect(work.drain()).rejects.toThrow('second');
    expect(ended).toBe(2);
    expect(taken).toEqual([0, 2]);
    expect(work.size).toBe(0);
  });

  it('when settled after a failure elsewhere, then it waits for every task and answers the earliest failure in start order', async () => {
    const taken: number[] = [];
    const work = new InOrder<number>(4, (n) => taken.push(n));
    await work.add(() => later(15, 0));
    await work.add(() => later(10, 1).then(() => Promise.reject(new Error('earlier'))));
    await work.add(() => later(1, 2).then(() => Promise.reject(new Error('later'))));
    expect(((await work.settle()) as Error).message).toBe('earlier');
    expect(taken).toEqual([0]);
    expect(await work.settle()).toBeUndefined();
  });
});
