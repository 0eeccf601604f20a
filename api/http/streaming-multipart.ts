/**
 * multipart/form-data read part by part (RFC 7578) with busboy, for inputs of any size: each
 * file part is an AsyncIterable<Buffer> pulled from the request with backpressure (busboy stops
 * parsing while a part's buffer is full, so the socket is read only as fast as the consumer
 * reads), and nothing is held beyond busboy's one-chunk buffer. Parts come in request order;
 * a part that the consumer skips is drained when the next one is asked for.
 */
import busboy from 'busboy';
import type { Readable } from 'node:stream';
import type { Request, Response } from 'express';
import { AppError } from '../../shared/errors/index.ts';

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

const malformed = (why: string) => new AppError('bad_request', `malformed multipart body: ${why}`);

/** True when the request carries multipart/form-data. */
export function isMultipartForm(req: Request): boolean {
  return Boolean(req.is('multipart/form-data'));
}

/** Starts reading a multipart/form-data request; 415 for another media type, 400 without a boundary. */
export function streamMultipart(req: Request, opts: StreamingFormOptions = {}): StreamingForm {
  if (!isMultipartForm(req)) {
    throw new AppError('unsupported_media_type', `expected multipart/form-data, got ${req.headers['content-type'] ?? 'no content type'}`);
  }
  const maxParts = opts.maxParts ?? 8;
  const maxFieldBytes = opts.maxFieldBytes ?? 64 * 1024;
  let bb: busboy.Busboy;
  try {
    bb = busboy({
      headers: req.headers,
      // A 256 KiB part buffer keeps chunks large for the crypto that follows; the limits keep a
      // hostile form from making us track many parts.
      fileHwm: 256 * 1024,
      limits: { parts: maxParts, files: maxParts, fields: maxParts, fieldSize: maxFieldBytes, headerPairs: 16 },
    });
  } catch (err) {
    throw malformed((err as Error).message);
  }

  const queue: StreamedPart[] = [];
  let ended = false;
  let failure: AppError | null = null;
  let wake: (() => void) | null = null;
  /** File streams not yet ended: a failure must reach them, and next() drains a skipped one. */
  const open = new Set<Readable>();
  let bytesRead = 0;
  const notify = () => {
    const w = wake;
    wake = null;
    w?.();
  };
  const fail = (err: AppError) => {
    if (failure || ended) return;
    failure = err;
    req.unpipe(bb);
    // A part being read must see the failure, or its reader would wait for bytes forever.
    for (const s of open) s.destroy(err);
    bb.destroy();
    notify();
  };

  /** The stream behind each file part: the consumer is done with it once it asks for another part. */
  const streamOf = new WeakMap<StreamedPart, Readable>();
  bb.on('file', (name, stream, info) => {
    open.add(stream);
    stream.once('end', () => open.delete(stream));
    const part = filePart(name, stream, info.filename, info.mimeType, () => failure);
    streamOf.set(part, stream);
    queue.push(part);
    notify();
  });
  bb.on('field', (name, value, info) => {
    if (info.valueTruncated) {
      fail(new AppError('payload_too_large', `part ${name.slice(0, 64)} is larger than ${maxFieldBytes} bytes`));
      return;
    }
    const data = Buffer.from(value, 'utf8');
    queue.push({
      name,
      mimeType: info.mimeType,
      body: (async function* () { yield data; })(),
      text: async (max) => {
        if (data.length > max) throw new AppError('payload_too_large', `part ${name.slice(0, 64)} is larger than ${max} bytes`);
        return value;
      },
    });
    notify();
  });
  for (const limit of ['partsLimit', 'filesLimit', 'fieldsLimit'] as const) {
    bb.on(limit, () => fail(new AppError('validation_failed', `the form has more than ${maxParts} parts`)));
  }
  bb.on('error', (err) => fail(err instanceof AppError ? err : malformed((err as Error).message)));
  bb.on('close', () => {
    ended = true;
    notify();
  });
  req.on('data', (c: Buffer) => {
    bytesRead += c.length;
  });
  // A client that goes away mid-body never ends the pipe: fail instead of waiting forever.
  req.on('close', () => {
    if (!req.complete) fail(new AppError('bad_request', 'the client aborted the request'));
  });
  req.pipe(bb);

  let last: StreamedPart | null = null;
  return {
    get bytesRead() {
      return bytesRead;
    },
    async next() {
      // Drain what the consumer left of the part it had, so busboy moves on and can finish.
      const prev = last ? streamOf.get(last) : undefined;
      if (prev && open.has(prev)) prev.resume();
      last = null;
      for (;;) {
        if (failure) throw failure;
        const part = queue.shift();
        if (part) return (last = part);
        if (ended) return null;
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
      }
    },
    abandon(res) {
      if (req.complete) return;
      if (!res.headersSent) res.setHeader('Connection', 'close');
      req.unpipe(bb);
      for (const s of open) s.destroy();
      bb.destroy();
      req.resume();
    },
  };
}

function filePart(name: string, stream: Readable, filename: string | undefined, mimeType: string, failed: () => AppError | null): StreamedPart {
  // destroyOnReturn false: a consumer that stops early (the CMS reader at the end of the message)
  // must not destroy busboy's stream, or the rest of the form could never be read.
  const body = async function* (): AsyncGenerator<Buffer> {
    try {
      for await (const c of stream.iterator({ destroyOnReturn: false })) yield c as Buffer;
    } catch (err) {
      throw failed() ?? (err instanceof AppError ? err : malformed((err as Error).message));
    }
    const f = failed();
    if (f) throw f;
  };
  return {
    name,
    filename,
    mimeType,
    body: body(),
    async text(max) {
      const parts: Buffer[] = [];
      let n = 0;
      for await (const c of body()) {
        n += c.length;
        if (n > max) throw new AppError('payload_too_large', `part ${name.slice(0, 64)} is larger than ${max} bytes`);
        parts.push(c);
      }
      return Buffer.concat(parts).toString('utf8');
    },
  };
}
