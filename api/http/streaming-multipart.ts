/**
 * multipart/form-data read part by part (RFC 7578, RFC 2046 section 5.1.1), for inputs of any
 * size: each file part is an AsyncIterable<Buffer> pulled from the request with backpressure (the
 * request is paused while more than READ_AHEAD_BYTES wait, so the socket is read only as fast as
 * the consumer reads). Parts come in request order; a part that the consumer skips is drained
 * when the next one is asked for.
 *
 * The parser is pull-based and finds delimiters with Buffer#indexOf (native), so a file part is
 * handed out as views of the request's own chunks, never copied; busboy's JavaScript boundary
 * search cost about a tenth of a large conversion. Header values are parsed by
 * ./header-params.ts (names, filenames with RFC 8187 filename*, media types).
 */
import type { Request, Response } from 'express';
import { AppError, problem } from '../../shared/errors/index.ts';
import { basename, parseContentType, parseDisposition } from './header-params.ts';

/** One part of the form, as it arrives. */
export interface StreamedPart {
  name: string;
  /** The filename of the Content-Disposition, when the client sent one. */
  filename?: string;
  mimeType: string;
  /** The part's bytes; for a plain field, its value as one chunk. */
  body: AsyncIterable<Buffer>;
  /** Reads the part whole as UTF-8, refusing more than `maxBytes` (413). */
  text(maxBytes: number): Promise<string>;
}

export interface StreamingForm {
  /** The next part, or null after the closing delimiter. */
  next(): Promise<StreamedPart | null>;
  /** Request bytes received so far (the whole body, delimiters included). */
  readonly bytesRead: number;
  /**
   * Stops reading after a failure: the response asks the client to close the connection and
   * what the client still sends is read and discarded, so it sees our answer rather than a reset.
   */
  abandon(res: Response): void;
}

export interface StreamingFormOptions {
  /** Most parts accepted (fields and files together). */
  maxParts?: number;
  /** Largest plain field value. */
  maxFieldBytes?: number;
}

/** Request bytes read ahead of the consumer before the request is paused. */
const READ_AHEAD_BYTES = 1024 * 1024;
/** Largest header block of one part. */
const MAX_PART_HEADER_BYTES = 16 * 1024;
const MAX_HEADER_PAIRS = 16;
const CRLF = Buffer.from('\r\n');
const HEADER_END = Buffer.from('\r\n\r\n');

const malformed = (why: string) => problem('bad_request', `malformed multipart body: ${why}`);

/** True when the request carries multipart/form-data. */
export function isMultipartForm(req: Request): boolean {
  return Boolean(req.is('multipart/form-data'));
}

/** Starts reading a multipart/form-data request; 415 for another media type, 400 without a boundary. */
export function streamMultipart(req: Request, opts: StreamingFormOptions = {}): StreamingForm {
  if (!isMultipartForm(req)) {
    throw problem(
      'unsupported_media_type',
      `expected multipart/form-data, got ${req.headers['content-type'] ?? 'no content type'}`,
    );
  }
  const maxParts = opts.maxParts ?? 8;
  const maxFieldBytes = opts.maxFieldBytes ?? 64 * 1024;
  const boundary = parseContentType(req.headers['content-type'] ?? '')?.params?.boundary;
  if (!boundary) throw malformed('Multipart: Boundary not found');
  // Every delimiter is CRLF "--" boundary; the first may start the body, so a CRLF is put before it.
  const delimiter = Buffer.from(`\r\n--${boundary}`, 'latin1');

  // --- the request as a queue of chunks, paused while READ_AHEAD_BYTES wait
  const queue: Buffer[] = [];
  let queued = 0;
  let inputEnded = false;
  let discarding = false;
  let failure: AppError | null = null;
  let wake: (() => void) | null = null;
  let bytesRead = 0;
  const notify = () => {
    const w = wake;
    wake = null;
    w?.();
  };
  const fail = (err: AppError) => {
    if (failure) return;
    failure = err;
    notify();
  };
  req.on('data', (c: Buffer) => {
    bytesRead += c.length;
    if (discarding) return;
    queue.push(c);
    queued += c.length;
    if (queued >= READ_AHEAD_BYTES) req.pause();
    notify();
  });
  req.on('end', () => {
    inputEnded = true;
    notify();
  });
  req.on('error', (err) => fail(malformed(err.message)));
  // A client that goes away mid-body never ends the request: fail instead of waiting forever.
  req.on('close', () => {
    if (!req.complete) fail(problem('bad_request', 'the client aborted the request'));
    notify();
  });

  /** The next request chunk, or null at the end of the request. */
  async function pull(): Promise<Buffer | null> {
    for (;;) {
      if (failure) throw failure;
      const c = queue.shift();
      if (c) {
        queued -= c.length;
        if (queued < READ_AHEAD_BYTES && req.isPaused() && !discarding) req.resume();
        return c;
      }
      if (inputEnded) return null;
      await new Promise<void>((resolve) => {
        wake = resolve;
      });
    }
  }

  // --- the parser: buf[pos..] is what is read and not consumed yet
  let buf: Buffer = Buffer.from(CRLF);
  let pos = 0;
  const unexpectedEnd = () => failure ?? malformed('Unexpected end of form');

  /** Appends the next chunk to the unconsumed bytes (a copy: only for headers and split delimiters). */
  async function more(): Promise<void> {
    const c = await pull();
    if (!c) throw unexpectedEnd();
    buf = pos >= buf.length ? c : Buffer.concat([buf.subarray(pos), c]);
    pos = 0;
  }

  /** How many bytes at the end of buf could start a delimiter split across chunks. */
  function heldBack(): number {
    const from = Math.max(pos, buf.length - delimiter.length + 1);
    for (let s = buf.indexOf(13, from); s !== -1; s = buf.indexOf(13, s + 1)) {
      if (buf.subarray(s).equals(delimiter.subarray(0, buf.length - s))) return buf.length - s;
    }
    return 0;
  }

  /**
   * The body of the current part, as views of the input, up to the next delimiter (consumed);
   * `emit` false discards. Returns when the delimiter was read.
   */
  async function* partBytes(): AsyncGenerator<Buffer, void, undefined> {
    for (;;) {
      const i = buf.indexOf(delimiter, pos);
      if (i !== -1) {
        if (i > pos) yield buf.subarray(pos, i);
        pos = i + delimiter.length;
        return;
      }
      const keep = heldBack();
      const end = buf.length - keep;
      if (end > pos) yield buf.subarray(pos, end);
      pos = end;
      await more();
    }
  }

  type Boundary = 'part' | 'close';
  /** After a delimiter: the closing "--", or transport padding and CRLF before a part's headers. */
  async function afterDelimiter(): Promise<Boundary> {
    for (;;) {
      while (buf.length - pos < 2) await more();
      if (buf[pos] === 0x2d && buf[pos + 1] === 0x2d) {
        pos += 2;
        return 'close';
      }
      if (buf[pos] === 0x20 || buf[pos] === 0x09) {
        pos++;
        continue;
      }
      if (buf[pos] === 13 && buf[pos + 1] === 10) {
        pos += 2;
        return 'part';
      }
      throw malformed('Malformed part header');
    }
  }

  /** The header block of a part, names lower-cased, consumed with its blank line. */
  async function readHeaders(): Promise<Map<string, string>> {
    // No header at all: the blank line comes at once.
    while (buf.length - pos < 2) await more();
    let block = '';
    if (buf[pos] === 13 && buf[pos + 1] === 10) {
      pos += 2;
    } else {
      let i = buf.indexOf(HEADER_END, pos);
      while (i === -1) {
        if (buf.length - pos > MAX_PART_HEADER_BYTES) throw malformed('Malformed part header');
        await more();
        i = buf.indexOf(HEADER_END, pos);
      }
      if (i - pos > MAX_PART_HEADER_BYTES) throw malformed('Malformed part header');
      block = buf.toString('latin1', pos, i);
      pos = i + HEADER_END.length;
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
      if (colon <= 0) throw malformed('Malformed part header');
      if (++pairs > MAX_HEADER_PAIRS) continue;
      lastName = line.slice(0, colon).trim().toLowerCase();
      if (!headers.has(lastName)) headers.set(lastName, line.slice(colon + 1).trim());
    }
    return headers;
  }

  let state: 'start' | 'body' | 'between' | 'closed' = 'start';
  let current: AsyncGenerator<Buffer, void, undefined> | null = null;
  let parts = 0;

  /** Reads past the current part's body, wherever its consumer left it. */
  async function finishCurrent(): Promise<void> {
    if (state !== 'body') return;
    const g = current ?? partBytes();
    current = null;
    for (let r = await g.next(); !r.done; r = await g.next()) {
      // discarded
    }
    state = 'between';
  }

  /** Stops reading: what the client still sends is read and discarded. */
  function drainRequest(): void {
    discarding = true;
    queue.length = 0;
    queued = 0;
    req.resume();
  }

  async function nextPart(): Promise<StreamedPart | null> {
    if (state === 'start') {
      // The preamble (RFC 2046 section 5.1.1) is read up to the first delimiter and dropped.
      state = 'body';
    }
    for (;;) {
      if (state === 'closed') return null;
      await finishCurrent();
      const b = await afterDelimiter();
      if (b === 'close') {
        state = 'closed';
        // The epilogue is ignored.
        drainRequest();
        return null;
      }
      const headers = await readHeaders();
      state = 'body';
      if (++parts > maxParts)
        throw problem('validation_failed', `the form has more than ${maxParts} parts`);
      const dispHeader = headers.get('content-disposition');
      const disp = dispHeader ? parseDisposition(dispHeader) : undefined;
      // A part without a form-data disposition is skipped (RFC 7578 4.2).
      if (!disp || disp.type !== 'form-data') continue;
      const name = disp.params?.name ?? '';
      let filename = disp.params?.['filename*'] ?? disp.params?.filename;
      if (filename !== undefined) filename = basename(filename);
      let mimeType = 'text/plain';
      const ct = headers.get('content-type');
      const parsed = ct ? parseContentType(ct) : undefined;
      if (parsed) mimeType = `${parsed.type}/${parsed.subtype}`;
      if (mimeType === 'application/octet-stream' || filename !== undefined)
        return filePart(name, filename, mimeType);
      return await fieldPart(name, mimeType);
    }
  }

  /** A plain field, read whole now (at most maxFieldBytes). */
  async function fieldPart(name: string, mimeType: string): Promise<StreamedPart> {
    const chunks: Buffer[] = [];
    let n = 0;
    const g = partBytes();
    current = g;
    for (let r = await g.next(); !r.done; r = await g.next()) {
      n += r.value.length;
      if (n > maxFieldBytes)
        throw problem(
          'payload_too_large',
          `part ${name.slice(0, 64)} is larger than ${maxFieldBytes} bytes`,
        );
      chunks.push(Buffer.from(r.value));
    }
    current = null;
    state = 'between';
    const data = Buffer.concat(chunks, n);
    const value = data.toString('utf8');
    return {
      name,
      mimeType,
      body: (async function* () {
        yield data;
      })(),
      text: async (max) => {
        if (data.length > max)
          throw problem(
            'payload_too_large',
            `part ${name.slice(0, 64)} is larger than ${max} bytes`,
          );
        return value;
      },
    };
  }

  /** A file part streamed as views of the request chunks; its consumer may stop early. */
  function filePart(name: string, filename: string | undefined, mimeType: string): StreamedPart {
    const g = partBytes();
    current = g;
    let started = false;
    const mine = () => current === g;
    async function* body(): AsyncGenerator<Buffer> {
      if (started) throw new Error(`part ${name} is read once`);
      started = true;
      for (;;) {
        // next() moved on (draining this part): the rest is no longer ours to give.
        if (!mine()) throw failure ?? malformed('the part was skipped');
        let r: IteratorResult<Buffer, void>;
        try {
          r = await g.next();
        } catch (err) {
          throw failure ?? (err instanceof AppError ? err : malformed((err as Error).message));
        }
        if (r.done) {
          if (mine()) {
            current = null;
            state = 'between';
          }
          return;
        }
        yield r.value;
      }
    }
    const it = body();
    return {
      name,
      filename,
      mimeType,
      body: it,
      async text(max) {
        const parts: Buffer[] = [];
        let n = 0;
        for await (const c of it) {
          n += c.length;
          if (n > max)
            throw problem(
              'payload_too_large',
              `part ${name.slice(0, 64)} is larger than ${max} bytes`,
            );
          parts.push(c);
        }
        return Buffer.concat(parts).toString('utf8');
      },
    };
  }

  // Parts are read one at a time; a call made while another runs waits for it.
  let chain: Promise<unknown> = Promise.resolve();
  return {
    get bytesRead() {
      return bytesRead;
    },
    next() {
      const run = chain.then(async () => {
        if (failure) throw failure;
        try {
          return await nextPart();
        } catch (err) {
          const e = failure ?? (err instanceof AppError ? err : malformed((err as Error).message));
          fail(e);
          throw e;
        }
      });
      chain = run.catch(() => {});
      return run;
    },
    abandon(res) {
      if (req.complete) return;
      if (!res.headersSent) res.setHeader('Connection', 'close');
      failure ??= problem('bad_request', 'the form was abandoned');
      drainRequest();
      notify();
    },
  };
}
