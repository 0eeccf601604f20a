/** Stream helpers shared by the stores: reading a put body, and relaying a download. */
import { Readable, addAbortSignal } from 'node:stream';
import type { PutBody } from './types.ts';

export function isReadable(body: unknown): body is Readable {
  return body instanceof Readable;
}

/**
 * Yields the body's bytes chunk by chunk (strings become UTF-8). The signal, when given, destroys
 * the source so a pending read rejects with the signal's reason at once.
 */
export async function* byteChunks(body: PutBody, signal?: AbortSignal): AsyncGenerator<Uint8Array> {
  const source = isReadable(body) ? body : Readable.from(body, { objectMode: true });
  if (signal) addAbortSignal(signal, source);
  for await (const chunk of source as AsyncIterable<unknown>) {
    if (chunk instanceof Uint8Array) yield chunk;
    else if (typeof chunk === 'string') yield Buffer.from(chunk, 'utf8');
    else throw new TypeError('put body must yield Uint8Array chunks');
  }
}

/** Destroys a Readable body after a failed put (iterables clean up through the iterator). */
export function discardBody(body: PutBody): void {
  if (isReadable(body) && !body.destroyed) body.destroy();
}

/**
 * Wraps a download so consumer-side errors come out mapped (e.g. a dropped connection becomes
 * storage_unavailable) and destroying the result releases the source.
 */
export function relay(source: Readable, mapError: (err: unknown) => unknown): Readable {
  async function* pump(): AsyncGenerator<Buffer> {
    try {
      for await (const chunk of source as AsyncIterable<Buffer>) yield chunk;
    } catch (err) {
      throw mapError(err);
    } finally {
      if (!source.destroyed) source.destroy();
    }
  }
  return Readable.from(pump(), { objectMode: false });
}
