/**
 * Small multipart/form-data bodies read whole, with caps on every part (for keystores and
 * other inputs measured in kilobytes), on the form-data layer over the one multipart scanner
 * (streaming-multipart.ts). It used busboy until the fuzzers showed busboy dropping bytes of a
 * file part whose data held near-miss delimiters split across small chunks, and stalling (no
 * close, no error, no answer) on a body that ended inside a part with mangled headers.
 */
import type { Request } from 'express';
import { problem } from '../../shared/errors/index.ts';
import { partTooLarge, streamMultipart } from './streaming-multipart.ts';
import { readWhole } from '../../shared/streams.ts';
import { UnfitInput, canonicalInput } from '../../shared/ids.ts';
import { unfitProblem } from './params.ts';

export interface SmallForm {
  /** Field values by name; null-prototype, so a part named `__proto__` is only a name. */
  fields: Record<string, string>;
  files: Record<string, { data: Buffer; filename?: string; mimeType: string }>;
}

const FILES = 4;
const FIELDS = 20;
const FIELD_BYTES = 64 * 1024;

/** Reads a multipart form whose files are at most `maxFileBytes` each. */
export async function readSmallMultipart(req: Request, maxFileBytes: number): Promise<SmallForm> {
  // A client gone before this reader started (during authentication) left a request that will never end.
  if (req.destroyed) throw problem('bad_request', 'the client aborted the request');
  const stream = streamMultipart(req, { maxParts: FILES + FIELDS, maxFieldBytes: FIELD_BYTES });
  const form: SmallForm = { fields: Object.create(null), files: Object.create(null) };
  let files = 0;
  let fields = 0;
  try {
    for (let part = await stream.next(); part; part = await stream.next()) {
      if (part.filename === undefined) {
        fields += 1;
        if (fields > FIELDS)
          throw problem('validation_failed', `the form has more than ${FIELDS} fields`);
        form.fields[part.name] = await part.text(FIELD_BYTES);
        continue;
      }
      files += 1;
      if (files > FILES)
        throw problem('validation_failed', `the form has more than ${FILES} files`);
      const data = await readWhole(part.body, maxFileBytes, () =>
        partTooLarge(part.name, maxFileBytes),
      );
      form.files[part.name] = {
        data,
        filename: part.filename,
        mimeType: part.mimeType,
      };
    }
  } catch (err) {
    // The refusal is written first; what the client still sends is read and discarded.
    if (req.res) stream.abandon(req.res);
    throw err;
  }
  // The fields take the canonical form every other request input takes at the entry (a kid shaped
  // like a UUID was stored upper-case and could then never be named again in a lower-cased path).
  try {
    canonicalInput(form.fields, 'body');
  } catch (err) {
    throw err instanceof UnfitInput ? unfitProblem(err) : err;
  }
  return form;
}
