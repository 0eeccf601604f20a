import { IN_PLACE_BYTES, conversionRunner } from '../../../api/threads/conversions.ts';
import type { WorkPool } from '../../../api/threads/pool.ts';
import { problem } from '../../../shared/errors/index.ts';
import type { KeyResolver } from '../../../shared/pkcs7/index.ts';
import { checkSignersTask } from '../../../shared/threads/signer-checks.ts';
import { OpenSslDir, chunked, collect, resolverFor } from '../../../support/fixtures/pkcs7.ts';
import { hostileSignedData, hostileSigner } from '../../../support/fixtures/hostile-cms.ts';

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

/** A runner of CONVERT_THREAD_FROM 2 with one conversion running on the event loop until released. */
function oneRunning() {
  const pool = countingPool();
  const runner = conversionRunner(pool, 2);
  let release!: () => void;
  const first = runner.convert(garbage(new Promise<void>((r) => (release = r))), {
    metadata: {},
    resolver,
  });
  return { pool, runner, first, release };
}

describe('where a conversion runs', () => {
  it('when a conversion runs alone, then it keeps the event loop; one started beside it goes to a thread; once it has ended the next is alone again', async () => {
    const { pool, runner, first, release } = oneRunning();
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

  it('when an input held whole is at most IN_PLACE_BYTES, then it keeps the event loop beside another; a larger one, or one of unknown size, goes to a thread', async () => {
    const { pool, runner, first, release } = oneRunning();
    const opts = { metadata: {}, resolver };
    await expect(runner.convert(garbage(), opts, IN_PLACE_BYTES)).rejects.toMatchObject({
      code: 'cms_malformed',
    });
    expect(pool.calls).toBe(0);
    for (const size of [IN_PLACE_BYTES + 1, undefined])
      await expect(runner.convert(garbage(), opts, size)).rejects.toMatchObject({
        code: 'pool_busy',
      });
    expect(pool.calls).toBe(2);
    release();
    await expect(first).rejects.toMatchObject({ code: 'cms_malformed' });
  });

  it('when CONVERT_THREAD_FROM is 1, then even a small conversion alone goes to a thread', async () => {
    const pool = countingPool();
    await expect(
      conversionRunner(pool, 1).convert(garbage(), { metadata: {}, resolver }, 100),
    ).rejects.toMatchObject({ code: 'pool_busy' });
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

describe("a SignedData's signature checks", () => {
  it('when its conversion keeps the event loop, then its signature and chain checks run as a pool task all the same, with the same answer', async () => {
    const ssl = new OpenSslDir();
    try {
      const signer = hostileSigner(ssl, 'off-loop');
      const file = hostileSignedData(ssl, signer, Buffer.from('mail'), { signers: 2, decoys: 0 });
      const tasks: string[] = [];
      const pool: WorkPool = {
        async run<T>(task: string, input: unknown): Promise<T> {
          tasks.push(task);
          // The input crosses to a thread by structured clone: Buffers arrive as Uint8Arrays.
          return checkSignersTask(structuredClone(input) as never) as T;
        },
        utilization: () => 0,
        queueSize: () => 0,
        threads: () => 1,
        open: () => true,
        close: async () => {},
      };
      const convert = async (runner: ReturnType<typeof conversionRunner> | null) => {
        const opts = { metadata: {}, resolver: resolverFor([signer]) };
        const r = runner
          ? await runner.convert(chunked(file, 4096), opts)
          : await (
              await import('../../../shared/pkcs7/index.ts')
            ).convertPkcs7ToJose(chunked(file, 4096), opts);
        return JSON.parse((await collect(r.body)).toString()) as { protected: string };
      };
      const onLoop = await convert(conversionRunner(pool, 2));
      expect(tasks).toEqual(['checkSignersTask']);
      // The protected header (what was verified and recorded) is the same as checked in place.
      expect(onLoop.protected).toBe((await convert(null)).protected);
    } finally {
      ssl.cleanup();
    }
  });
});
