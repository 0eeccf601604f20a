/**
 * Byte streams as async iterables: counted as they pass, or read whole
 * under a cap that is checked while reading, never after.
 */

/** The same chunks, untouched, with `onBytes` told each one's length as it passes. */
export async function* counted<T extends Uint8Array>(
  source: AsyncIterable<T>,
  onBytes: (n: number) => void,
): AsyncGenerator<T> {
  for await (const chunk of source) {
    onBytes(chunk.length);
    yield chunk;
  }
}

/** All of `source` as one buffer; `tooLarge()` is thrown as soon as more than `maxBytes` arrived. */
export async function readWhole(
  source: AsyncIterable<Buffer>,
  maxBytes: number,
  tooLarge: () => Error,
): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let n = 0;
  for await (const c of source) {
    n += c.length;
    if (n > maxBytes) throw tooLarge();
    chunks.push(c);
  }
  return Buffer.concat(chunks, n);
}

/** The start of a stream read ahead by `holdHead`, and the whole stream again from its start. */
export interface HeldHead {
  /** The chunks read: all of the stream when `whole`. */
  chunks: Buffer[];
  /** Their bytes. */
  bytes: number;
  /** The stream ended within the limit. */
  whole: boolean;
  /** The held chunks (let go as they are taken), then what the source still has. */
  stream: AsyncIterable<Buffer>;
}

/**
 * Reads `source` until it ends or more than `maxBytes` arrived: a small input is then known
 * whole (its size, whether a part follows it) before anything is done with it, and a large one
 * still streams, its first chunks first.
 */
export async function holdHead(source: AsyncIterable<Buffer>, maxBytes: number): Promise<HeldHead> {
  const it = source[Symbol.asyncIterator]();
  const chunks: Buffer[] = [];
  let bytes = 0;
  let whole = false;
  while (bytes <= maxBytes) {
    const r = await it.next();
    if (r.done) {
      whole = true;
      break;
    }
    chunks.push(r.value);
    bytes += r.value.length;
  }
  const held = [...chunks];
  const stream = (async function* () {
    yield* held.splice(0);
    if (whole) return;
    for (;;) {
      const r = await it.next();
      if (r.done) return;
      yield r.value;
    }
  })();
  return { chunks, bytes, whole, stream };
}
