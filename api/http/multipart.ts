/**
 * Small multipart/form-data bodies read whole, with caps on every part (for keystores and
 * other inputs measured in kilobytes). Large inputs use the streaming readers of the
 * migration routes instead.
 */
import busboy from 'busboy';
import type { Request } from 'express';
import { AppError } from '../../shared/errors/index.ts';

export interface SmallForm {
  /** Field values by name; null-prototype, so a part named `__proto__` is only a name. */
  fields: Record<string, string>;
  files: Record<string, { data: Buffer; filename?: string; mimeType: string }>;
}

const FILES = 4;
const FIELDS = 20;
const FIELD_BYTES = 64 * 1024;
/** How long busboy may take to close the form after the last byte (it closes at once on a whole form). */
const END_GRACE_MS = 250;

const malformed = (err: unknown) => new AppError('bad_request', `malformed multipart body: ${(err as Error)?.message ?? String(err)}`);

/** Reads a multipart form whose files are at most `maxFileBytes` each. */
export function readSmallMultipart(req: Request, maxFileBytes: number): Promise<SmallForm> {
  if (!req.is('multipart/form-data')) {
    return Promise.reject(new AppError('unsupported_media_type', `expected multipart/form-data, got ${req.headers['content-type'] ?? 'no content type'}`));
  }
  return new Promise((resolve, reject) => {
    let bb: busboy.Busboy;
    try {
      bb = busboy({ headers: req.headers, limits: { fileSize: maxFileBytes, files: FILES, fields: FIELDS, parts: FILES + FIELDS, fieldSize: FIELD_BYTES } });
    } catch (err) {
      reject(malformed(err));
      return;
    }
    const form: SmallForm = { fields: Object.create(null), files: Object.create(null) };
    let settled = false;
    /**
     * Settles once. After a failure the rest of the body is read and discarded rather than the
     * socket destroyed, and the answer asks the client to close: the refusal is written first
     * and the client reads it instead of a reset.
     */
    const fail = (err: AppError) => {
      if (settled) return;
      settled = true;
      req.unpipe(bb);
      if (req.res && !req.res.headersSent) req.res.setHeader('Connection', 'close');
      req.resume();
      reject(err);
    };
    bb.on('field', (name, value, info) => {
      // A value cut at fieldSize would be read as if whole.
      if (info.valueTruncated) fail(new AppError('payload_too_large', `field ${name.slice(0, 64)} is larger than ${FIELD_BYTES} bytes`));
      form.fields[name] = value;
    });
    // busboy skips what is over its counts and reads on to the end of the body: refused instead.
    bb.on('filesLimit', () => fail(new AppError('validation_failed', `the form has more than ${FILES} files`)));
    bb.on('fieldsLimit', () => fail(new AppError('validation_failed', `the form has more than ${FIELDS} fields`)));
    bb.on('partsLimit', () => fail(new AppError('validation_failed', `the form has more than ${FILES + FIELDS} parts`)));
    bb.on('file', (name, stream, info) => {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('limit', () => fail(new AppError('payload_too_large', `part ${name.slice(0, 64)} is larger than ${maxFileBytes} bytes`)));
      // busboy emits a truncated body ("Unexpected end of form") on the file stream too: without
      // this listener that 'error' event is unhandled and takes the whole process down.
      stream.on('error', (err) => fail(malformed(err)));
      stream.on('end', () => {
        form.files[name] = { data: Buffer.concat(chunks), filename: info.filename, mimeType: info.mimeType };
      });
    });
    bb.on('error', (err) => fail(malformed(err)));
    bb.on('close', () => {
      if (settled) return;
      settled = true;
      resolve(form);
    });
    req.on('error', (err) => fail(malformed(err)));
    // busboy can stall on a body that ends inside a part whose headers were mangled: no 'close',
    // no 'error', the request unanswered (found by the readers' fuzzer). Once the whole body has
    // been handed over, a form that has not closed shortly after is malformed.
    req.on('end', () => {
      setTimeout(() => fail(malformed(new Error('the body ended inside a part'))), END_GRACE_MS).unref();
    });
    // A client that goes away mid-body ends nothing; one gone before this reader started (during
    // authentication) left a destroyed request that would never be read: both are refused.
    const aborted = () => fail(new AppError('bad_request', 'the client aborted the request'));
    req.on('close', () => {
      if (!req.complete) aborted();
    });
    if (req.destroyed) {
      aborted();
      return;
    }
    req.pipe(bb);
  });
}
