/** Small helpers for the storage tests: generated bodies, draining streams, problem matchers. */
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import { AppError } from '../../../shared/errors/index.ts';

export const MiB = 1024 * 1024;

/** Yields `mib` fresh 1 MiB chunks (chunk i filled with byte i) and hashes them on the way. */
export function generated(mib: number, opts: { failAfterMiB?: number; onChunk?: () => void } = {}) {
  const hash = createHash('sha256');
  async function* chunks(): AsyncGenerator<Uint8Array> {
    for (let i = 0; i < mib; i++) {
      if (opts.failAfterMiB === i) throw new Error('source broke');
      const chunk = Buffer.alloc(MiB, i & 0xff);
      hash.update(chunk);
      opts.onChunk?.();
      yield chunk;
    }
  }
  return { chunks: chunks(), digest: () => hash.digest('hex') };
}

/** A Readable that emits `mib` MiB and then errors. */
export function brokenReadable(mib: number): Readable {
  let sent = 0;
  return new Readable({
    read() {
      if (sent++ < mib) this.push(Buffer.alloc(MiB, 7));
      else this.destroy(new Error('source broke'));
    },
  });
}

export async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

export async function sha256Of(stream: Readable): Promise<{ digest: string; size: number }> {
  const hash = createHash('sha256');
  let size = 0;
  for await (const chunk of stream) {
    hash.update(chunk as Buffer);
    size += (chunk as Buffer).length;
  }
  return { digest: hash.digest('hex'), size };
}

export async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

export async function keysOf(items: AsyncIterable<{ key: string }>): Promise<string[]> {
  return (await collect(items)).map((item) => item.key);
}

/** Awaits a promise expected to fail and returns the AppError it failed with. */
export async function problemFrom(promise: Promise<unknown>): Promise<AppError> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof AppError) return err;
    throw new Error(`expected an AppError, got ${String(err)}`, { cause: err });
  }
  throw new Error('expected a failure, but it succeeded');
}

v8.setFlagsFromString('--expose-gc');
const collectGarbage = runInNewContext('gc') as () => void;

/**
 * Live heap plus Buffer memory after a full garbage collection: what a streamed put really
 * holds on to (without the GC, already-dropped chunks would still be counted).
 */
export function liveMemory(): number {
  collectGarbage();
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
}

export function text(value: string): AsyncIterable<Uint8Array> {
  return (async function* () {
    yield Buffer.from(value);
  })();
}
