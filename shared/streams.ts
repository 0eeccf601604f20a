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
