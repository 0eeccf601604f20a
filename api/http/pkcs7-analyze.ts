/**
 * POST analyze-pkcs7 (spec 4, contract 5): the JSON analysis of a PKCS#7/CMS input, read in one
 * streaming pass from a multipart form's file part or from the raw body. Served at
 * /api/v3/migration/stream/analyze-pkcs7 and at the unversioned alias.
 */
import type { Request, RequestHandler } from 'express';
import type { AppContext } from '../context.ts';
import { isMultipartForm, streamMultipart, type StreamingForm } from './streaming-multipart.ts';
import { tenantKeyResolver } from '../../shared/keys/cms-resolver.ts';
import { rawBody } from './streaming.ts';
import { streamedOperation } from './streamed-operation.ts';
import { analyzePkcs7 } from '../../shared/pkcs7/index.ts';
import { problem } from '../../shared/errors/index.ts';

/**
 * Media types a raw (non-multipart) analyze body may have (RFC 8551 section 3.2.1, RFC 5751); a
 * whole mail (.eml, contract 9) is message/rfc822. What the bytes are is found from the bytes.
 */
const RAW_TYPES = [
  'application/pkcs7-mime',
  'application/x-pkcs7-mime',
  'application/pkcs7-signature',
  'application/x-pkcs7-signature',
  'message/rfc822',
  'application/octet-stream',
];

/** The `file` part of a form: other parts (a metadata part sent out of habit) are skipped. */
async function filePartOf(form: StreamingForm): Promise<AsyncIterable<Buffer>> {
  for (let part = await form.next(); part; part = await form.next()) {
    if (part.name === 'file') return part.body;
  }
  throw problem('validation_failed', 'the file part (the PKCS#7/CMS file) is required');
}

/** The raw (non-multipart) body, after its media type is checked. */
function rawInput(req: Request): AsyncIterable<Buffer> {
  if (!req.is(RAW_TYPES)) {
    throw problem(
      'unsupported_media_type',
      `send multipart/form-data with a file part, or the file itself as ${RAW_TYPES.join(', ')}`,
    );
  }
  return rawBody(req);
}

/** POST analyze-pkcs7: the JSON analysis of contract 5, read in one streaming pass. */
export function analyzeHandler(ctx: AppContext): RequestHandler {
  return streamedOperation(ctx, 'migration.analyze', async (op, req, res) => {
    // The form is held from its start, so a failure while its parts are read still abandons it
    // (the reader stops reading ahead and discards the rest) before the problem is written.
    op.form = isMultipartForm(req) ? streamMultipart(req) : null;
    const input = op.form ? await filePartOf(op.form) : rawInput(req);
    const analysis = await analyzePkcs7(
      op.countIn(input),
      tenantKeyResolver(ctx, req.auth.tenantId, null),
    );
    // Parts after `file` are not read; the connection closes instead of waiting on them.
    if (op.form) op.form.abandon(res);
    const body = JSON.stringify(analysis);
    res.status(200).type('application/json').send(body);
    op.bytesOut = body.length;
    op.details = { contentType: analysis.contentType, convertible: analysis.convertible };
  });
}
