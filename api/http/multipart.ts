/**
 * Small multipart/form-data bodies read whole, with caps on every part (for keystores and
 * other inputs measured in kilobytes). Large inputs use the streaming readers of the
 * migration routes instead.
 */
import busboy from 'busboy';
import type { Request } from 'express';
import { AppError } from '../../shared/errors/index.ts';

export interface SmallForm {
  fields: Record<string, string>;
  files: Record<string, { data: Buffer; filename?: string; mimeType: string }>;
}

/** Reads a multipart form whose files are at most `maxFileBytes` each. */
export function readSmallMultipart(req: Request, maxFileBytes: number): Promise<SmallForm> {
  if (!req.is('multipart/form-data')) {
    return Promise.reject(new AppError('unsupported_media_type', `expected multipart/form-data, got ${req.headers['content-type'] ?? 'no content type'}`));
  }
  return new Promise((resolve, reject) => {
    let bb: busboy.Busboy;
    try {
      bb = busboy({ headers: req.headers, limits: { fileSize: maxFileBytes, files: 4, fields: 20, fieldSize: 64 * 1024 } });
    } catch (err) {
      reject(new AppError('bad_request', `malformed multipart body: ${(err as Error).message}`));
      return;
    }
    const form: SmallForm = { fields: {}, files: {} };
    let failed: AppError | null = null;
    bb.on('field', (name, value) => {
      form.fields[name] = value;
    });
    bb.on('file', (name, stream, info) => {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('limit', () => {
        failed = new AppError('payload_too_large', `part ${name} is larger than ${maxFileBytes} bytes`);
      });
      stream.on('end', () => {
        form.files[name] = { data: Buffer.concat(chunks), filename: info.filename, mimeType: info.mimeType };
      });
    });
    bb.on('error', (err) => reject(new AppError('bad_request', `malformed multipart body: ${(err as Error).message}`)));
    bb.on('close', () => (failed ? reject(failed) : resolve(form)));
    req.pipe(bb);
  });
}
