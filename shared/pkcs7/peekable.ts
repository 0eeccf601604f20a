/** A stream of one buffer. */
export async function* once(b: Buffer): AsyncGenerator<Buffer> {
  yield b;
}

/** Lets the first bytes of a stream be looked at before it is handed on whole. */
export class Peekable implements AsyncIterable<Buffer> {
  #it: AsyncIterator<Buffer>;
  #held: Buffer[] = [];
  #heldBytes = 0;
  #done = false;

  constructor(src: AsyncIterable<Buffer>) {
    this.#it = src[Symbol.asyncIterator]();
  }

  /**
   * Up to `n` first bytes (fewer when the stream is shorter). What is held is copied: a source
   * that reuses its buffers (BerReader's `reuse`) overwrites a chunk once the next is asked for.
   */
  async peek(n: number): Promise<Buffer> {
    while (this.#heldBytes < n && !this.#done) {
      const r = await this.#it.next();
      if (r.done) this.#done = true;
      else {
        this.#held.push(Buffer.from(r.value));
        this.#heldBytes += r.value.length;
      }
    }
    return Buffer.concat(this.#held).subarray(0, n);
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Buffer> {
    const held = this.#held;
    this.#held = [];
    yield* held;
    if (this.#done) return;
    for (;;) {
      const r = await this.#it.next();
      if (r.done) return;
      yield r.value;
    }
  }
}
