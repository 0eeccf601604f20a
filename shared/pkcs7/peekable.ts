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
  readonly #owned: boolean;

  /**
   * `owned`: the source hands out buffers it never writes again (a decipher's output), so what is
   * held needs no copy. Without it, what is held is copied: a source that reuses its buffers
   * (BerReader's `reuse`) overwrites a chunk once the next is asked for.
   */
  constructor(src: AsyncIterable<Buffer>, opts: { owned?: boolean } = {}) {
    this.#it = src[Symbol.asyncIterator]();
    this.#owned = opts.owned === true;
  }

  /** Up to `n` first bytes (fewer when the stream is shorter), a view of what is held. */
  async peek(n: number): Promise<Buffer> {
    while (this.#heldBytes < n && !this.#done) {
      const r = await this.#it.next();
      if (r.done) this.#done = true;
      else {
        this.#held.push(this.#owned ? r.value : Buffer.from(r.value));
        this.#heldBytes += r.value.length;
      }
    }
    // Joined once, so a later peek of more bytes does not copy them again.
    if (this.#held.length > 1) this.#held = [Buffer.concat(this.#held)];
    return (this.#held[0] ?? Buffer.alloc(0)).subarray(0, n);
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
