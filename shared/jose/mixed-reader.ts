/**
 * The multipart/mixed conversion output fed back to the stream endpoints, read
 * part after part on the one multipart scanner (shared/mime/multipart.ts): each body is an
 * AsyncIterable<Buffer> that ends at the next delimiter, so a ciphertext part of any size
 * streams. This layer holds what is particular to convert's output: no preamble, a short epilogue,
 * small part headers, and its refusals as jose-malformed problems.
 */
import { problem } from '../errors/index.ts';
import { parseContentType } from '../mime/header-params.ts';
import { MultipartScanner, usableBoundary } from '../mime/multipart.ts';
import { readWhole } from '../streams.ts';

export interface MixedPart {
  /** The part's Content-Type, lower-cased; '' when the part has none. */
  contentType: string;
  body: AsyncIterable<Buffer>;
}

const MAX_HEADER_BYTES = 8 * 1024;
const MAX_EPILOGUE_BYTES = 1024;

const malformed = (why: string) =>
  problem('jose_malformed', `the multipart/mixed body is malformed: ${why}`);

/** The boundary parameter of a multipart/mixed Content-Type, or null. */
export function mixedBoundary(contentType: string | undefined): string | null {
  const media = contentType ? parseContentType(contentType) : undefined;
  if (media?.type !== 'multipart' || media.subtype !== 'mixed') return null;
  const boundary = media.params.boundary;
  return usableBoundary(boundary) ? boundary : null;
}

/** Reads the parts of a multipart/mixed byte stream in order. */
export class MixedReader {
  #it: AsyncIterator<Buffer>;
  #scanner: MultipartScanner;

  constructor(input: AsyncIterable<Buffer>, boundary: string) {
    this.#it = input[Symbol.asyncIterator]();
    const pull = async () => {
      const r = await this.#it.next();
      return r.done ? null : r.value;
    };
    // Convert never writes a preamble, and its epilogue is at most a line end.
    this.#scanner = new MultipartScanner(pull, {
      boundary,
      malformed,
      maxHeaderBytes: MAX_HEADER_BYTES,
      maxPreambleBytes: 0,
      maxEpilogueBytes: MAX_EPILOGUE_BYTES,
    });
  }

  /** The next part, or null after the closing delimiter; the previous part's rest is skipped. */
  async next(): Promise<MixedPart | null> {
    const part = await this.#scanner.next();
    if (!part) return null;
    return { contentType: (part.headers.get('content-type') ?? '').toLowerCase(), body: part.body };
  }

  /** Reads the next part whole (capped); null when the body has no further part. */
  async nextSmall(maxBytes: number): Promise<{ contentType: string; data: Buffer } | null> {
    const part = await this.next();
    if (!part) return null;
    const data = await readWhole(part.body, maxBytes, () =>
      malformed(`a ${part.contentType || 'JSON'} part is larger than ${maxBytes} bytes`),
    );
    return { contentType: part.contentType, data };
  }

  /** Releases the input (e.g. after a failure). */
  async close(): Promise<void> {
    await this.#it.return?.();
  }
}
