/**
 * A streaming reader of multipart/mixed (RFC 2046 section 5.1.1) for the conversion output of
 * contract 5 fed back to the stream endpoints: parts come one after the other, each body an
 * AsyncIterable<Buffer> that ends at the next delimiter. Only the few bytes that might begin a
 * delimiter are held back, so a ciphertext part of any size streams; part headers are capped.
 */
import { problem } from '../errors/index.ts';

export interface MixedPart {
  /** The part's Content-Type, lower-cased; '' when the part has none. */
  contentType: string;
  body: AsyncIterable<Buffer>;
}

const MAX_HEADER_BYTES = 8 * 1024;
const MAX_EPILOGUE_BYTES = 1024;
const EMPTY = Buffer.alloc(0);

const malformed = (why: string) =>
  problem('jose_malformed', `the multipart/mixed body is malformed: ${why}`);

/** The boundary parameter of a multipart/mixed Content-Type, or null. */
export function mixedBoundary(contentType: string | undefined): string | null {
  if (!contentType || !/^\s*multipart\/mixed\s*;/i.test(contentType)) return null;
  const m = /;\s*boundary=(?:"([^"]{1,70})"|([^\s;"]{1,70}))/i.exec(contentType);
  return m ? (m[1] ?? m[2]) : null;
}

/** Reads the parts of a multipart/mixed byte stream in order. */
export class MixedReader {
  #it: AsyncIterator<Buffer>;
  #buf: Buffer = EMPTY;
  #eof = false;
  /** CRLF "--" boundary: what ends every part body (RFC 2046 section 5.1.1). */
  #delim: Buffer;
  #state: 'start' | 'between' | 'in-part' | 'done' = 'start';

  constructor(input: AsyncIterable<Buffer>, boundary: string) {
    this.#it = input[Symbol.asyncIterator]();
    this.#delim = Buffer.from(`\r\n--${boundary}`, 'latin1');
  }

  async #fill(): Promise<boolean> {
    if (this.#eof) return false;
    for (;;) {
      const r = await this.#it.next();
      if (r.done) {
        this.#eof = true;
        return false;
      }
      if (r.value.length === 0) continue;
      this.#buf = this.#buf.length ? Buffer.concat([this.#buf, r.value]) : r.value;
      return true;
    }
  }

  async #need(n: number): Promise<void> {
    while (this.#buf.length < n) if (!(await this.#fill())) throw malformed('it ends early');
  }

  /** Past a delimiter: either "--" (the close) or transport padding and CRLF, then headers. */
  async #afterDelimiter(): Promise<MixedPart | null> {
    await this.#need(2);
    if (this.#buf[0] === 0x2d && this.#buf[1] === 0x2d) {
      this.#state = 'done';
      this.#buf = EMPTY;
      // The epilogue carries nothing; a long one is not what convert wrote.
      let extra = 0;
      while (await this.#fill()) {
        extra += this.#buf.length;
        this.#buf = EMPTY;
        if (extra > MAX_EPILOGUE_BYTES) throw malformed('data after the closing delimiter');
      }
      return null;
    }
    let eol = this.#buf.indexOf('\r\n');
    while (eol < 0) {
      if (this.#buf.length > 80) throw malformed('bad delimiter line');
      await this.#need(this.#buf.length + 1);
      eol = this.#buf.indexOf('\r\n');
    }
    if (!/^[ \t]*$/.test(this.#buf.subarray(0, eol).toString('latin1')))
      throw malformed('bad delimiter line');
    this.#buf = this.#buf.subarray(eol + 2);
    let end = this.#buf.indexOf('\r\n\r\n');
    // A part without headers starts right after the delimiter line's CRLF with another CRLF.
    const bare = this.#buf.length >= 2 && this.#buf[0] === 0x0d && this.#buf[1] === 0x0a;
    while (!bare && end < 0) {
      if (this.#buf.length > MAX_HEADER_BYTES) throw malformed('part headers too long');
      if (!(await this.#fill())) throw malformed('it ends inside part headers');
      end = this.#buf.indexOf('\r\n\r\n');
    }
    const headerText = bare ? '' : this.#buf.subarray(0, end).toString('latin1');
    this.#buf = this.#buf.subarray(bare ? 2 : end + 4);
    let contentType = '';
    for (const line of headerText.split('\r\n')) {
      const m = /^content-type:\s*(.*)$/i.exec(line);
      if (m) contentType = m[1].trim().toLowerCase();
    }
    this.#state = 'in-part';
    return { contentType, body: this.#body() };
  }

  /** Yields part bytes up to the next delimiter, keeping back what could begin one. */
  async *#body(): AsyncGenerator<Buffer> {
    const d = this.#delim;
    for (;;) {
      const at = this.#buf.indexOf(d);
      if (at >= 0) {
        const out = this.#buf.subarray(0, at);
        this.#buf = this.#buf.subarray(at + d.length);
        this.#state = 'between';
        if (out.length) yield out;
        return;
      }
      const keep = Math.min(this.#buf.length, d.length - 1);
      const out = this.#buf.subarray(0, this.#buf.length - keep);
      this.#buf = this.#buf.subarray(this.#buf.length - keep);
      if (out.length) yield out;
      if (!(await this.#fill())) throw malformed('a part has no closing delimiter');
    }
  }

  /** The next part, or null after the closing delimiter; the previous part's rest is skipped. */
  async next(): Promise<MixedPart | null> {
    if (this.#state === 'done') return null;
    if (this.#state === 'in-part') {
      for await (const _ of this.#body()) {
        // skipped
      }
    }
    if (this.#state === 'start') {
      // The first delimiter may open the body without the CRLF (RFC 2046 section 5.1.1);
      // convert never writes a preamble, so none is accepted.
      const first = this.#delim.subarray(2);
      await this.#need(first.length);
      if (!this.#buf.subarray(0, first.length).equals(first))
        throw malformed('it does not start with the boundary delimiter');
      this.#buf = this.#buf.subarray(first.length);
    }
    return this.#afterDelimiter();
  }

  /** Reads the next part whole (capped); null when the body has no further part. */
  async nextSmall(maxBytes: number): Promise<{ contentType: string; data: Buffer } | null> {
    const part = await this.next();
    if (!part) return null;
    const chunks: Buffer[] = [];
    let n = 0;
    for await (const c of part.body) {
      n += c.length;
      if (n > maxBytes)
        throw malformed(`a ${part.contentType || 'JSON'} part is larger than ${maxBytes} bytes`);
      chunks.push(c);
    }
    return { contentType: part.contentType, data: Buffer.concat(chunks) };
  }

  /** Releases the input (e.g. after a failure). */
  async close(): Promise<void> {
    this.#eof = true;
    await this.#it.return?.();
  }
}
