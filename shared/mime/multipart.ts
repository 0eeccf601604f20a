/**
 * The one multipart scanner (RFC 2046 section 5.1.1) under both multipart formats the service
 * reads: multipart/form-data requests (api/http/streaming-multipart.ts) and the multipart/mixed
 * result of convert fed back to the stream endpoints (shared/jose/mixed-reader.ts). It finds
 * delimiters, reads part headers under a cap and hands out each part body as views of the input
 * chunks (never copied), pulling the next chunk only when the consumer asks for it, so the input
 * is read only as fast as the consumer reads (backpressure). What a part means is the layer's.
 *
 * Delimiters are found with Buffer#indexOf (native); only the few bytes that might begin a
 * delimiter split across chunks are held back. Every refusal goes through the layer's
 * `malformed`, so each format answers with its own problem.
 */

/** The next input chunk, or null at the end of the input; throws when the input failed. */
export type Pull = () => Promise<Buffer | null>;

export interface ScannerOptions {
  /** The boundary parameter of the Content-Type (1 to 70 characters, RFC 2046 section 5.1.1). */
  boundary: string;
  /** The layer's problem for a malformed body. */
  malformed: (why: string) => Error;
  /** Largest header block of one part. */
  maxHeaderBytes?: number;
  /** Most preamble bytes before the first delimiter (0: the body starts with it). */
  maxPreambleBytes?: number;
  /**
   * Most epilogue bytes after the closing delimiter, read and counted; when absent the epilogue
   * is left unread for the layer to discard.
   */
  maxEpilogueBytes?: number;
  /**
   * 'any' also takes bare LF line ends around delimiters (mail saved on Unix, OpenSSL's S/MIME
   * output); the line end before a delimiter, LF or CRLF, belongs to it (RFC 2046 5.1.1).
   * Default 'crlf', as HTTP bodies are.
   */
  lineEnds?: 'crlf' | 'any';
  /**
   * False hands each part out whole, its header block included, with no headers parsed: a
   * clear-signed part is signed with its headers (RFC 1847 section 2.1), and archive readers
   * parse headers with their own line-end rules (shared/mime/entity.ts).
   */
  parseHeaders?: boolean;
}

/** One part as it arrives: its headers and its body, which ends at the next delimiter. */
export interface ScannedPart {
  /** Header names lower-cased; the first of a repeated name wins. */
  headers: Map<string, string>;
  /** Read once; after the scanner moved on (next()), reading it fails. */
  body: AsyncIterable<Buffer>;
}

const DEFAULT_HEADER_BYTES = 16 * 1024;
const MAX_HEADER_PAIRS = 16;
/** Longest transport padding after a delimiter (RFC 2046 allows LWSP there; nobody sends much). */
const MAX_PADDING = 80;
const HEADER_END = Buffer.from('\r\n\r\n');

/** True for a boundary RFC 2046 allows in length (its characters are the Content-Type parser's). */
export function usableBoundary(boundary: string | undefined): boundary is string {
  return typeof boundary === 'string' && boundary.length >= 1 && boundary.length <= 70;
}

/** Reads the parts of one multipart body in order; a part its consumer skips is drained. */
export class MultipartScanner {
  #pull: Pull;
  #opts: ScannerOptions;
  /** CRLF "--" boundary: what ends every part body. */
  #delim: Buffer;
  /** LF "--" boundary in 'any' mode: an optional CR before it is dropped from the part. */
  #anyEol: boolean;
  /** buf[pos..] is read and not consumed; a line end is put first so the first delimiter may open the body. */
  #buf: Buffer;
  /** That first line end, until the first chunk comes. */
  readonly #lead: Buffer;
  /** Its length once dropped in front of a first chunk it cannot be part of a delimiter with. */
  #leadSkipped = 0;
  #pos = 0;
  #state: 'start' | 'body' | 'between' | 'closed' = 'start';
  #current: AsyncGenerator<Buffer, void, undefined> | null = null;
  #error: unknown = null;

  constructor(pull: Pull, opts: ScannerOptions) {
    if (!usableBoundary(opts.boundary)) throw opts.malformed('the boundary is missing or too long');
    this.#pull = pull;
    this.#opts = opts;
    this.#anyEol = opts.lineEnds === 'any';
    const eol = this.#anyEol ? '\n' : '\r\n';
    this.#delim = Buffer.from(`${eol}--${opts.boundary}`, 'latin1');
    this.#buf = this.#lead = Buffer.from(eol, 'latin1');
  }

  /** The next part, or null after the closing delimiter. A failure is final: it is thrown again. */
  async next(): Promise<ScannedPart | null> {
    if (this.#error) throw this.#error;
    try {
      return await this.#nextPart();
    } catch (err) {
      this.#error = err;
      throw err;
    }
  }

  async #nextPart(): Promise<ScannedPart | null> {
    if (this.#state === 'closed') return null;
    if (this.#state === 'start') {
      // The preamble is read up to the first delimiter and dropped (or refused past its cap).
      const max = this.#opts.maxPreambleBytes ?? Infinity;
      const refused = () => this.#opts.malformed('it does not start with the boundary delimiter');
      let n = 0;
      for await (const c of this.#partBytes()) {
        n += c.length;
        if (n + this.#leadSkipped > max) throw refused();
      }
      // The line end put first counts as preamble, as when it stays in front (see #more).
      if (n + this.#leadSkipped > max) throw refused();
    } else if (this.#state === 'body') {
      const g = this.#current ?? this.#partBytes();
      this.#current = null;
      for (let r = await g.next(); !r.done; r = await g.next()) {
        // skipped by its consumer
      }
    }
    this.#state = 'between';
    if ((await this.#afterDelimiter()) === 'close') {
      this.#state = 'closed';
      await this.#epilogue();
      return null;
    }
    const headers =
      this.#opts.parseHeaders === false ? new Map<string, string>() : await this.#headers();
    this.#state = 'body';
    const g = this.#partBytes();
    this.#current = g;
    return { headers, body: this.#body(g) };
  }

  /** A part body handed to its consumer: it ends the part, or fails once the scanner moved on. */
  async *#body(g: AsyncGenerator<Buffer, void, undefined>): AsyncGenerator<Buffer> {
    for (;;) {
      if (this.#current !== g) throw this.#error ?? this.#opts.malformed('the part was skipped');
      let r: IteratorResult<Buffer, void>;
      try {
        r = await g.next();
      } catch (err) {
        this.#error ??= err;
        throw err;
      }
      if (r.done) {
        this.#current = null;
        this.#state = 'between';
        return;
      }
      yield r.value;
    }
  }

  /** Appends the next chunk to the unconsumed bytes (a copy only when some are left). */
  async #more(why: string): Promise<void> {
    const c = await this.#pull();
    if (!c) throw this.#opts.malformed(why);
    // The line end put first matters only to a delimiter at the very start: without a '-' there,
    // the first chunk is taken as it is, not copied behind it.
    if (this.#buf === this.#lead && this.#pos === 0 && c.length > 0 && c[0] !== 0x2d) {
      this.#buf = c;
      this.#leadSkipped = this.#lead.length;
      return;
    }
    this.#buf =
      this.#pos >= this.#buf.length ? c : Buffer.concat([this.#buf.subarray(this.#pos), c]);
    this.#pos = 0;
  }

  /** How many bytes at the end of buf could start a delimiter split across chunks. */
  #heldBack(): number {
    const buf = this.#buf;
    const from = Math.max(this.#pos, buf.length - this.#delim.length + 1);
    let held = 0;
    for (
      let s = buf.indexOf(this.#delim[0], from);
      s !== -1;
      s = buf.indexOf(this.#delim[0], s + 1)
    ) {
      if (buf.subarray(s).equals(this.#delim.subarray(0, buf.length - s))) {
        held = buf.length - s;
        break;
      }
    }
    // 'any': a CR just before a possible delimiter may belong to it.
    const before = buf.length - held - 1;
    if (this.#anyEol && before >= this.#pos && buf[before] === 13) held++;
    return held;
  }

  /** The bytes up to the next delimiter (consumed with it), as views of the input. */
  async *#partBytes(): AsyncGenerator<Buffer, void, undefined> {
    for (;;) {
      const i = this.#buf.indexOf(this.#delim, this.#pos);
      if (i !== -1) {
        const cr = this.#anyEol && i > this.#pos && this.#buf[i - 1] === 13 ? 1 : 0;
        const out = this.#buf.subarray(this.#pos, i - cr);
        this.#pos = i + this.#delim.length;
        if (out.length) yield out;
        return;
      }
      const end = this.#buf.length - this.#heldBack();
      const out = this.#buf.subarray(this.#pos, end);
      this.#pos = end;
      if (out.length) yield out;
      await this.#more('a part has no closing delimiter');
    }
  }

  /** After a delimiter: the closing "--", or transport padding and CRLF before a part's headers. */
  async #afterDelimiter(): Promise<'part' | 'close'> {
    for (let padding = 0; ; padding++) {
      while (this.#buf.length - this.#pos < 2) await this.#more('it ends after a delimiter');
      const a = this.#buf[this.#pos];
      const b = this.#buf[this.#pos + 1];
      if (a === 0x2d && b === 0x2d) {
        this.#pos += 2;
        return 'close';
      }
      if (a === 13 && b === 10) {
        this.#pos += 2;
        return 'part';
      }
      if (this.#anyEol && a === 10) {
        this.#pos += 1;
        return 'part';
      }
      if ((a !== 0x20 && a !== 0x09) || padding >= MAX_PADDING)
        throw this.#opts.malformed('bad delimiter line');
      this.#pos++;
    }
  }

  /** The header block of a part, consumed with its blank line. */
  async #headers(): Promise<Map<string, string>> {
    const max = this.#opts.maxHeaderBytes ?? DEFAULT_HEADER_BYTES;
    while (this.#buf.length - this.#pos < 2) await this.#more('it ends inside part headers');
    let block = '';
    // No header at all: the blank line comes at once.
    if (this.#buf[this.#pos] === 13 && this.#buf[this.#pos + 1] === 10) {
      this.#pos += 2;
    } else {
      let i = this.#buf.indexOf(HEADER_END, this.#pos);
      while (i === -1) {
        if (this.#buf.length - this.#pos > max) throw this.#opts.malformed('part headers too long');
        await this.#more('it ends inside part headers');
        i = this.#buf.indexOf(HEADER_END, this.#pos);
      }
      if (i - this.#pos > max) throw this.#opts.malformed('part headers too long');
      block = this.#buf.toString('latin1', this.#pos, i);
      this.#pos = i + HEADER_END.length;
    }
    const headers = new Map<string, string>();
    let pairs = 0;
    let lastName: string | null = null;
    for (const line of block ? block.split('\r\n') : []) {
      if ((line[0] === ' ' || line[0] === '\t') && lastName) {
        // Obsolete line folding (RFC 5322 section 2.2.3).
        headers.set(lastName, `${headers.get(lastName)} ${line.trim()}`);
        continue;
      }
      const colon = line.indexOf(':');
      if (colon <= 0) throw this.#opts.malformed('malformed part header');
      if (++pairs > MAX_HEADER_PAIRS) continue;
      lastName = line.slice(0, colon).trim().toLowerCase();
      if (!headers.has(lastName)) headers.set(lastName, line.slice(colon + 1).trim());
    }
    return headers;
  }

  /** Reads and counts the epilogue when the layer caps it; otherwise leaves it to the layer. */
  async #epilogue(): Promise<void> {
    const max = this.#opts.maxEpilogueBytes;
    if (max === undefined) return;
    let n = this.#buf.length - this.#pos;
    this.#buf = Buffer.alloc(0);
    this.#pos = 0;
    for (;;) {
      if (n > max) throw this.#opts.malformed('data after the closing delimiter');
      const c = await this.#pull();
      if (!c) return;
      n += c.length;
    }
  }
}
