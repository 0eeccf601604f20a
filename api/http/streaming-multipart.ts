/**
 * multipart/form-data read part by part (RFC 7578, RFC 2046 section 5.1.1), for inputs of any
 * size: each file part is an AsyncIterable<Buffer> pulled from the request with backpressure (the
 * request is paused while more than READ_AHEAD_BYTES wait, so the socket is read only as fast as
 * the consumer reads). Parts come in request order; a part that the consumer skips is drained
 * when the next one is asked for.
 *
 * The bytes are cut into parts by the one multipart scanner (shared/mime/multipart.ts), which
 * hands a file part out as views of the request's own chunks, never copied; this layer gives the
 * parts their form-data meaning (names, filenames with RFC 8187 filename*, fields read whole,
 * limits per route) and feeds the scanner from the request.
 */
import type { Request, Response } from 'express';
import { AppError, problem } from '../../shared/errors/index.ts';
import { basename, parseContentType, parseDisposition } from '../../shared/mime/header-params.ts';
import { MultipartScanner, usableBoundary } from '../../shared/mime/multipart.ts';
import { onBodyTimeout, streamsBody } from './body-deadline.ts';

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
  if (!usableBoundary(boundary)) throw malformed('Multipart: Boundary not found');
  const scanner = new MultipartScanner(pull, { boundary, malformed });

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
  // An upload of any size may take as long as it needs, but not pause past the idle deadline.
  streamsBody(req);
  onBodyTimeout(req, fail);
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

  let parts = 0;

  /** Stops reading: what the client still sends is read and discarded. */
  function drainRequest(): void {
    discarding = true;
    queue.length = 0;
    queued = 0;
    req.resume();
  }

  async function nextPart(): Promise<StreamedPart | null> {
    for (;;) {
      const part = await scanner.next();
      if (!part) {
        // The epilogue is ignored.
        drainRequest();
        return null;
      }
      if (++parts > maxParts)
        throw problem('validation_failed', `the form has more than ${maxParts} parts`);
      const dispHeader = part.headers.get('content-disposition');
      const disp = dispHeader ? parseDisposition(dispHeader) : undefined;
      // A part without a form-data disposition is skipped (RFC 7578 4.2).
      if (!disp || disp.type !== 'form-data') continue;
      const name = disp.params?.name ?? '';
      let filename = disp.params?.['filename*'] ?? disp.params?.filename;
      if (filename !== undefined) filename = basename(filename);
      let mimeType = 'text/plain';
      const ct = part.headers.get('content-type');
      const parsed = ct ? parseContentType(ct) : undefined;
      if (parsed) mimeType = `${parsed.type}/${parsed.subtype}`;
      if (mimeType === 'application/octet-stream' || filename !== undefined)
        return filePart(name, filename, mimeType, part.body);
      return await fieldPart(name, mimeType, part.body);
    }
  }

  /** A plain field, read whole now (at most maxFieldBytes). */
  async function fieldPart(
    name: string,
    mimeType: string,
    bytes: AsyncIterable<Buffer>,
  ): Promise<StreamedPart> {
    const chunks: Buffer[] = [];
    let n = 0;
    for await (const c of bytes) {
      n += c.length;
      if (n > maxFieldBytes)
        throw problem(
          'payload_too_large',
          `part ${name.slice(0, 64)} is larger than ${maxFieldBytes} bytes`,
        );
      chunks.push(Buffer.from(c));
    }
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
  function filePart(
    name: string,
    filename: string | undefined,
    mimeType: string,
    bytes: AsyncIterable<Buffer>,
  ): StreamedPart {
    async function* body(): AsyncGenerator<Buffer> {
      try {
        yield* bytes;
      } catch (err) {
        // The request's own failure (an abort) is the answer, rather than what it caused.
        throw failure ?? (err instanceof AppError ? err : malformed((err as Error).message));
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
