/**
 * A pull-based streaming BER/DER reader (X.690). It parses TLV headers incrementally over input
 * chunks of any size and alignment, so a caller walks a CMS structure element by element while
 * the large content is handed out as slices of the input chunks, never held whole.
 *
 * Limits: lengths up to 2^53 - 1, a nesting depth limit, and a size cap on every element a caller
 * captures. Any breach, any truncation and any inconsistency is a cms-* problem, never a hang.
 */
import { isEoc, isUniversal, TAG, type BerHeader } from './ber-header.ts';
import { problem } from '../errors/index.ts';

export interface BerReaderOptions {
  /** Deepest nesting of constructed elements accepted. */
  maxDepth?: number;
  /** Content slices are batched until at least this many bytes before they are yielded. */
  batchSize?: number;
}

const EMPTY = Buffer.alloc(0);
const DEFAULT_MAX_DEPTH = 64;
/**
 * 112 KiB: fewer, larger steps through decipher, cipher and socket than 64 KiB, for less server
 * CPU per conversion (bench/results/design-figures.md). A batch ends with the slice that
 * reaches the size, so with `openssl cms -stream` input (4 KiB segments) it stays under 116 KiB,
 * below glibc's 128 KiB mmap threshold (shared/node-flags.ts): the buffers made per batch come
 * from the heap rather than a map and unmap each.
 */
const DEFAULT_BATCH = 112 * 1024;
/** Content slices at least this long are yielded as views of the input, without batching. */
const MIN_DIRECT = 16 * 1024;

function toBuffer(chunk: Uint8Array): Buffer {
  return Buffer.isBuffer(chunk)
    ? chunk
    : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
}

interface Scope {
  /** Absolute end offset, or -1 for indefinite length. */
  end: number;
  /** The tightest definite end of this scope and its ancestors. */
  limit: number;
}

/** Reads BER from an async iterable of chunks, pulling a chunk only when it needs bytes. */
export class BerReader {
  #it: AsyncIterator<Uint8Array>;
  #buf: Buffer = EMPTY;
  #pos = 0;
  /** Absolute offset of #buf[0]. */
  #base = 0;
  #eof = false;
  #scopes: Scope[] = [];
  #rec: Buffer[] | null = null;
  #recLen = 0;
  #recCap = 0;
  readonly maxDepth: number;
  readonly batchSize: number;
  /** Set once anything only BER allows was seen: indefinite lengths, constructed strings, long lengths. */
  ber = false;

  constructor(input: AsyncIterable<Uint8Array>, opts: BerReaderOptions = {}) {
    this.#it = input[Symbol.asyncIterator]();
    this.maxDepth = opts.maxDepth ?? DEFAULT_MAX_DEPTH;
    this.batchSize = opts.batchSize ?? DEFAULT_BATCH;
  }

  /** Absolute offset of the next unread byte. */
  get position(): number {
    return this.#base + this.#pos;
  }

  /** Number of entered constructed scopes. */
  get depth(): number {
    return this.#scopes.length;
  }

  /** Bytes buffered and not yet consumed. */
  available(): number {
    return this.#buf.length - this.#pos;
  }

  /** Pulls the next non-empty chunk; false at the end of the input. */
  async fill(): Promise<boolean> {
    if (this.#eof) return false;
    for (;;) {
      const r = await this.#it.next();
      if (r.done) {
        this.#eof = true;
        return false;
      }
      const chunk = toBuffer(r.value);
      if (chunk.length === 0) continue;
      if (this.#pos >= this.#buf.length) {
        this.#base += this.#buf.length;
        this.#buf = chunk;
      } else {
        // Only a few header bytes straddle chunks, except while read() gathers; that copies once.
        this.#base += this.#pos;
        this.#buf = Buffer.concat([this.#buf.subarray(this.#pos), chunk]);
      }
      this.#pos = 0;
      return true;
    }
  }

  /** Releases the input (e.g. when the consumer stopped early). */
  async close(): Promise<void> {
    this.#eof = true;
    await this.#it.return?.();
  }

  /** True when the input has no further byte. */
  async atEof(): Promise<boolean> {
    if (this.available() > 0) return false;
    return !(await this.fill());
  }

  /** Consumes `n` buffered bytes (n <= available()) and returns them as a slice. */
  #take(n: number): Buffer {
    const s = this.#buf.subarray(this.#pos, this.#pos + n);
    this.#pos += n;
    if (this.#rec) this.#record(s);
    return s;
  }

  #record(s: Buffer): void {
    this.#recLen += s.length;
    if (this.#recLen > this.#recCap) {
      throw problem('cms_too_large', `a CMS element exceeds ${this.#recCap} bytes`);
    }
    // Copy: a recorded slice must not pin or alias the caller's input chunk.
    this.#rec!.push(Buffer.from(s));
  }

  #truncated(): Error {
    return problem('cms_truncated', `the input ends early, at byte ${this.position}`);
  }

  /** Parses a header from the buffered bytes; undefined when more bytes are needed. */
  #tryHeader(): BerHeader | undefined {
    const buf = this.#buf;
    const start = this.#pos;
    let p = start;
    if (p >= buf.length) return undefined;
    const b0 = buf[p++];
    const tagClass = b0 >> 6;
    const constructed = (b0 & 0x20) !== 0;
    let tag = b0 & 0x1f;
    if (tag === 0x1f) {
      // High tag number form (X.690 section 8.1.2.4); CMS never needs more than a few bits.
      tag = 0;
      for (let i = 0; ; i++) {
        if (p >= buf.length) return undefined;
        const b = buf[p++];
        if (i === 3) throw problem('cms_malformed', 'tag number too large');
        tag = tag * 128 + (b & 0x7f);
        if ((b & 0x80) === 0) break;
      }
    }
    if (p >= buf.length) return undefined;
    const l0 = buf[p++];
    let length: number;
    if (l0 < 0x80) {
      length = l0;
    } else if (l0 === 0x80) {
      if (!constructed) throw problem('cms_malformed', 'indefinite length on a primitive element');
      length = -1;
      this.ber = true;
    } else if (l0 === 0xff) {
      throw problem('cms_malformed', 'reserved length octet 0xFF');
    } else {
      const n = l0 & 0x7f;
      if (n > 8) throw problem('cms_malformed', 'length field longer than 8 bytes');
      if (p + n > buf.length) return undefined;
      length = 0;
      for (let i = 0; i < n; i++) length = length * 256 + buf[p++];
      // Beyond 2^53 a JavaScript number loses integers; no real input is that large.
      if (length > Number.MAX_SAFE_INTEGER)
        throw problem('cms_malformed', 'length exceeds 2^53 - 1');
      if (buf[p - n] === 0 || length < 0x80) this.ber = true;
    }
    if (tagClass === 0 && tag === 0 && (constructed || length !== 0)) {
      throw problem('cms_malformed', 'malformed end-of-contents marker');
    }
    const headerLength = p - start;
    return {
      tagClass,
      constructed,
      tag,
      length,
      headerLength,
      offset: this.#base + start,
      raw: buf.subarray(start, p),
    };
  }

  /** Reads the next header, checking it fits in the enclosing definite-length elements. */
  async readHeader(): Promise<BerHeader> {
    let h = this.#tryHeader();
    while (!h) {
      if (!(await this.fill())) throw this.#truncated();
      h = this.#tryHeader();
    }
    const limit = this.#scopes.length ? this.#scopes[this.#scopes.length - 1].limit : Infinity;
    const end = h.offset + h.headerLength + Math.max(h.length, 0);
    if (end > limit)
      throw problem('cms_malformed', `element at byte ${h.offset} overruns its parent`);
    this.#take(h.headerLength);
    return h;
  }

  /** Peeks the next header without consuming it; null at the end of the input. */
  async peekHeader(): Promise<BerHeader | null> {
    let h = this.#tryHeader();
    while (!h) {
      if (!(await this.fill())) {
        if (this.available() === 0) return null;
        throw this.#truncated();
      }
      h = this.#tryHeader();
    }
    return h;
  }

  /** Enters a constructed element read by readHeader. */
  enter(h: BerHeader): void {
    if (!h.constructed)
      throw problem('cms_malformed', `expected a constructed element at byte ${h.offset}`);
    if (this.#scopes.length >= this.maxDepth)
      throw problem('cms_malformed', `nesting deeper than ${this.maxDepth}`);
    const parent = this.#scopes.length ? this.#scopes[this.#scopes.length - 1].limit : Infinity;
    const end = h.length < 0 ? -1 : h.offset + h.headerLength + h.length;
    this.#scopes.push({ end, limit: end < 0 ? parent : Math.min(parent, end) });
  }

  /** True while the innermost entered element has another child. */
  async more(): Promise<boolean> {
    const s = this.#scopes[this.#scopes.length - 1];
    if (s.end >= 0) return this.position < s.end;
    while (this.available() < 2) {
      if (!(await this.fill())) throw this.#truncated();
    }
    return !(this.#buf[this.#pos] === 0 && this.#buf[this.#pos + 1] === 0);
  }

  /** Leaves the innermost element, consuming its end-of-contents marker when indefinite. */
  async leave(): Promise<void> {
    const s = this.#scopes[this.#scopes.length - 1];
    if (s.end >= 0) {
      if (this.position !== s.end)
        throw problem('cms_malformed', `unexpected data inside an element ending at byte ${s.end}`);
    } else {
      const h = await this.readHeader();
      if (!isEoc(h)) throw problem('cms_malformed', `unexpected element at byte ${h.offset}`);
    }
    this.#scopes.pop();
  }

  /** Reads `n` bytes into one buffer; only for small values (callers cap `n`). */
  async read(n: number): Promise<Buffer> {
    if (this.available() >= n) return Buffer.from(this.#take(n));
    const parts: Buffer[] = [];
    let left = n;
    while (left > 0) {
      if (this.available() === 0 && !(await this.fill())) throw this.#truncated();
      const s = this.#take(Math.min(left, this.available()));
      parts.push(Buffer.from(s));
      left -= s.length;
    }
    return Buffer.concat(parts);
  }

  /** Discards `n` bytes without holding them. */
  async skip(n: number): Promise<void> {
    if (this.#rec && this.#recLen + n > this.#recCap) {
      throw problem('cms_too_large', `a CMS element exceeds ${this.#recCap} bytes`);
    }
    let left = n;
    while (left > 0) {
      if (this.available() === 0 && !(await this.fill())) throw this.#truncated();
      left -= this.#take(Math.min(left, this.available())).length;
    }
  }

  /** Reads the value of a primitive element with a definite length of at most `cap` bytes. */
  async readValue(h: BerHeader, cap: number): Promise<Buffer> {
    if (h.constructed || h.length < 0)
      throw problem('cms_malformed', `expected a primitive element at byte ${h.offset}`);
    if (h.length > cap)
      throw problem('cms_too_large', `element at byte ${h.offset} exceeds ${cap} bytes`);
    return this.read(h.length);
  }

  /** Skips the body of an element whose header was read, walking indefinite lengths. */
  async skipBody(h: BerHeader): Promise<void> {
    if (h.length >= 0) return this.skip(h.length);
    this.enter(h);
    while (await this.more()) await this.skipBody(await this.readHeader());
    await this.leave();
  }

  /** The whole element (header included) as read, at most `cap` bytes; BER stays BER. */
  async capture(h: BerHeader, cap: number): Promise<Buffer> {
    if (h.length >= 0 && h.headerLength + h.length > cap) {
      throw problem('cms_too_large', `element at byte ${h.offset} exceeds ${cap} bytes`);
    }
    if (h.length >= 0 && this.available() >= h.length)
      return Buffer.concat([h.raw, this.#take(h.length)]);
    if (this.#rec) throw new Error('BerReader.capture cannot nest');
    this.#rec = [Buffer.from(h.raw)];
    this.#recLen = h.raw.length;
    this.#recCap = cap;
    try {
      await this.skipBody(h);
      return Buffer.concat(this.#rec);
    } finally {
      this.#rec = null;
    }
  }

  /**
   * Streams the value of an OCTET STRING (any tag, e.g. [0] IMPLICIT): primitive, or constructed
   * from OCTET STRING segments nested at any depth (X.690 section 8.7.3; what `openssl cms -stream`
   * writes). Slices of the input are yielded, batched up to batchSize; nothing is held whole.
   * With `reuse`, batches are gathered in one buffer kept for the whole stream instead of a new
   * one each: for a consumer that is done with each chunk before asking for the next (a hash, a
   * decipher), that is one allocation of the batch size fewer per batch, whose memory would
   * otherwise wait for the garbage collector.
   */
  async *octets(
    h: BerHeader,
    { reuse = false }: { reuse?: boolean } = {},
  ): AsyncGenerator<Buffer, void, undefined> {
    const batch: Buffer[] = [];
    let batched = 0;
    let scratch: Buffer | null = null;
    const flush = (): Buffer => {
      let out: Buffer;
      if (batch.length === 1) out = batch[0];
      else if (!reuse) out = Buffer.concat(batch, batched);
      else {
        if (!scratch || scratch.length < batched)
          scratch = Buffer.allocUnsafeSlow(Math.max(batched, 2 * this.batchSize));
        let at = 0;
        for (const b of batch) at += b.copy(scratch, at);
        out = scratch.subarray(0, batched);
      }
      batch.length = 0;
      batched = 0;
      return out;
    };
    let left = h.constructed ? 0 : h.length;
    let level = 0;
    if (h.constructed) {
      this.ber = true;
      this.enter(h);
      level = 1;
    }
    for (;;) {
      if (left > 0) {
        if (this.available() === 0 && !(await this.fill())) throw this.#truncated();
        const s = this.#take(Math.min(left, this.available()));
        left -= s.length;
        if (batched === 0 && s.length >= MIN_DIRECT) {
          // A large slice goes out as it is, a view of the input chunk: no copy.
          yield s;
          continue;
        }
        batch.push(s);
        batched += s.length;
        if (batched >= this.batchSize) yield flush();
        continue;
      }
      if (level === 0) break;
      if (!(await this.more())) {
        await this.leave();
        level--;
        continue;
      }
      const c = await this.readHeader();
      if (!isUniversal(c, TAG.OCTET_STRING)) {
        throw problem(
          'cms_malformed',
          `a constructed OCTET STRING holds another type at byte ${c.offset}`,
        );
      }
      if (c.constructed) {
        this.enter(c);
        level++;
      } else {
        left = c.length;
      }
    }
    if (batched > 0) yield flush();
  }
}
