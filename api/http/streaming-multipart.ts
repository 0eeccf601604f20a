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
 *
 * Two steps, two classes: RequestChunks turns the request into chunks pulled with backpressure
 * (and discards what follows a failure); FormReader reads the scanner's parts one at a time and
 * makes each a field read whole or a streamed file.
 */
import type { Request, Response } from 'express';
import { AppError, problem } from '../../shared/errors/index.ts';
import { basename, parseContentType, parseDisposition } from '../../shared/mime/header-params.ts';
import { MultipartScanner, usableBoundary } from '../../shared/mime/multipart.ts';
import { onBodyTimeout, streamsBody } from './body-deadline.ts';
import { readWhole } from '../../shared/streams.ts';

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
  const boundary = parseContentType(req.headers['content-type'] ?? '')?.params?.boundary;
  if (!usableBoundary(boundary)) throw malformed('Multipart: Boundary not found');
  return new FormReader(new RequestChunks(req), boundary, opts);
}

/** 413 for a part larger than `max` bytes, naming it. */
export const partTooLarge = (name: string, max: number) =>
  problem('payload_too_large', `part ${name.slice(0, 64)} is larger than ${max} bytes`);

/** The request as a queue of chunks, paused while READ_AHEAD_BYTES wait. */
class RequestChunks {
  readonly #req: Request;
  readonly #queue: Buffer[] = [];
  #queued = 0;
  #inputEnded = false;
  #discarding = false;
  #failure: AppError | null = null;
  #wake: (() => void) | null = null;
  #bytesRead = 0;

  constructor(req: Request) {
    this.#req = req;
    req.on('data', (c: Buffer) => this.#onData(c));
    req.on('end', () => {
      this.#inputEnded = true;
      this.#notify();
    });
    req.on('error', (err) => this.fail(malformed(err.message)));
    // An upload of any size may take as long as it needs, but not pause past the idle deadline.
    streamsBody(req);
    onBodyTimeout(req, (err) => this.fail(err));
    // A client that goes away mid-body never ends the request: fail instead of waiting forever.
    req.on('close', () => {
      if (!req.complete) this.fail(problem('bad_request', 'the client aborted the request'));
      this.#notify();
    });
  }

  /** Request bytes received so far (the whole body, delimiters included). */
  get bytesRead(): number {
    return this.#bytesRead;
  }

  /** Whether the client sent the whole request. */
  get complete(): boolean {
    return this.#req.complete;
  }

  /** The failure of the request (or the form), final once set. */
  get failure(): AppError | null {
    return this.#failure;
  }

  #onData(c: Buffer): void {
    this.#bytesRead += c.length;
    if (this.#discarding) return;
    this.#queue.push(c);
    this.#queued += c.length;
    if (this.#queued >= READ_AHEAD_BYTES) this.#req.pause();
    this.#notify();
  }

  #notify(): void {
    const w = this.#wake;
    this.#wake = null;
    w?.();
  }

  /** Sets the failure (the first one stays) and wakes the reader. */
  fail(err: AppError): void {
    if (this.#failure) return;
    this.#failure = err;
    this.#notify();
  }

  /** The next request chunk, or null at the end of the request. */
  async pull(): Promise<Buffer | null> {
    for (;;) {
      if (this.#failure) throw this.#failure;
      const c = this.#queue.shift();
      if (c) {
        this.#queued -= c.length;
        if (this.#queued < READ_AHEAD_BYTES && this.#req.isPaused() && !this.#discarding)
          this.#req.resume();
        return c;
      }
      if (this.#inputEnded) return null;
      await new Promise<void>((resolve) => {
        this.#wake = resolve;
      });
    }
  }

  /** Stops reading: what the client still sends is read and discarded. */
  discard(): void {
    this.#discarding = true;
    this.#queue.length = 0;
    this.#queued = 0;
    this.#req.resume();
  }

  /** Fails the reader, unless something failed first, and discards the rest of the request. */
  abandon(): void {
    this.#failure ??= problem('bad_request', 'the form was abandoned');
    this.discard();
    this.#notify();
  }
}

/**
 * The form over the scanner's parts: each part is counted, given its form-data meaning
 * (`describe`), and handed out as a field read whole (`fieldPart`) or a streamed file
 * (`filePart`); parts are read one at a time (`next`).
 */
class FormReader implements StreamingForm {
  readonly #chunks: RequestChunks;
  readonly #scanner: MultipartScanner;
  readonly #maxParts: number;
  readonly #maxFieldBytes: number;
  #parts = 0;
  /** Parts are read one at a time; a call made while another runs waits for it. */
  #chain: Promise<unknown> = Promise.resolve();

  constructor(chunks: RequestChunks, boundary: string, opts: StreamingFormOptions) {
    this.#chunks = chunks;
    this.#scanner = new MultipartScanner(() => chunks.pull(), { boundary, malformed });
    this.#maxParts = opts.maxParts ?? 8;
    this.#maxFieldBytes = opts.maxFieldBytes ?? 64 * 1024;
  }

  get bytesRead(): number {
    return this.#chunks.bytesRead;
  }

  next(): Promise<StreamedPart | null> {
    const chunks = this.#chunks;
    const run = this.#chain.then(async () => {
      if (chunks.failure) throw chunks.failure;
      try {
        return await this.#nextPart();
      } catch (err) {
        const e =
          chunks.failure ?? (err instanceof AppError ? err : malformed((err as Error).message));
        chunks.fail(e);
        throw e;
      }
    });
    this.#chain = run.catch(() => {});
    return run;
  }

  abandon(res: Response): void {
    if (this.#chunks.complete) return;
    if (!res.headersSent) res.setHeader('Connection', 'close');
    this.#chunks.abandon();
  }

  async #nextPart(): Promise<StreamedPart | null> {
    for (;;) {
      const part = await this.#scanner.next();
      if (!part) {
        // The epilogue is ignored.
        this.#chunks.discard();
        return null;
      }
      if (++this.#parts > this.#maxParts)
        throw problem('validation_failed', `the form has more than ${this.#maxParts} parts`);
      const meaning = describe(part.headers);
      // A part without a form-data disposition is skipped (RFC 7578 4.2).
      if (!meaning) continue;
      const { name, filename, mimeType } = meaning;
      if (mimeType === 'application/octet-stream' || filename !== undefined)
        return this.#filePart(name, filename, mimeType, part.body);
      return await this.#fieldPart(name, mimeType, part.body);
    }
  }

  /** A plain field, read whole now (at most maxFieldBytes). */
  async #fieldPart(
    name: string,
    mimeType: string,
    bytes: AsyncIterable<Buffer>,
  ): Promise<StreamedPart> {
    const max = this.#maxFieldBytes;
    const data = await readWhole(bytes, max, () => partTooLarge(name, max));
    const value = data.toString('utf8');
    return {
      name,
      mimeType,
      body: (async function* () {
        yield data;
      })(),
      text: async (max) => {
        if (data.length > max) throw partTooLarge(name, max);
        return value;
      },
    };
  }

  /** A file part streamed as views of the request chunks; its consumer may stop early. */
  #filePart(
    name: string,
    filename: string | undefined,
    mimeType: string,
    bytes: AsyncIterable<Buffer>,
  ): StreamedPart {
    const request = this.#chunks;
    async function* body(): AsyncGenerator<Buffer> {
      try {
        yield* bytes;
      } catch (err) {
        // The request's own failure (an abort) is the answer, rather than what it caused.
        throw (
          request.failure ?? (err instanceof AppError ? err : malformed((err as Error).message))
        );
      }
    }
    const it = body();
    return {
      name,
      filename,
      mimeType,
      body: it,
      async text(max) {
        return (await readWhole(it, max, () => partTooLarge(name, max))).toString('utf8');
      },
    };
  }
}

/** A part's form-data meaning from its headers; undefined for a part that is not form-data. */
function describe(
  headers: Map<string, string>,
): { name: string; filename?: string; mimeType: string } | undefined {
  const dispHeader = headers.get('content-disposition');
  const disp = dispHeader ? parseDisposition(dispHeader) : undefined;
  if (!disp || disp.type !== 'form-data') return undefined;
  const name = disp.params?.name ?? '';
  let filename = disp.params?.['filename*'] ?? disp.params?.filename;
  if (filename !== undefined) filename = basename(filename);
  let mimeType = 'text/plain';
  const ct = headers.get('content-type');
  const parsed = ct ? parseContentType(ct) : undefined;
  if (parsed) mimeType = `${parsed.type}/${parsed.subtype}`;
  return { name, filename, mimeType };
}
