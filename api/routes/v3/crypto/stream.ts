/**
 * Stream re-encryption and re-signing of convert results (contract 5), mounted at
 * /api/v3/crypto/stream behind the service-core bearer check. Both take the output of convert
 * exactly as it was returned and stream it: the JWE ciphertext flows through with backpressure,
 * the JWS content is hashed as it arrives.
 */
import { Router, type RequestHandler } from 'express';
import type { AppContext } from '../../../context.ts';
import { route } from '../../../http/route.ts';
import { streamMultipart } from '../../../http/streaming-multipart.ts';
import { streamedOperation } from '../../../http/streamed-operation.ts';
import { authorize } from '../../../middleware/authenticate.ts';
import { apiRateLimit } from '../../../middleware/rate-limit.ts';
import { tenantKeyResolver } from '../../../../shared/keys/cms-resolver.ts';
import { callerKeyResolver } from '../../../services/crypto/decrypting-caller.ts';
import { MixedReader, mixedBoundary } from '../../../../shared/jose/mixed-reader.ts';
import { reencryptStream } from '../../../../shared/jose/reencrypt.ts';
import { startResign } from '../../../../shared/jose/resign.ts';
import {
  acceptOneOf,
  labelFor,
  rawBody,
  responseSelection,
  sendStreamed,
} from '../../../http/streaming.ts';
import { problem } from '../../../../shared/errors/index.ts';

const MAX_SIGNATURE_BYTES = 64 * 1024;

/** The `kid` query parameter: the target key. */
function targetKid(query: unknown): string {
  const kid = (query as Record<string, unknown>).kid;
  if (typeof kid !== 'string' || kid === '' || kid.length > 256)
    throw problem('validation_failed', 'the kid query parameter (the target key) is required');
  return kid;
}

function flag(query: unknown, name: string): boolean {
  const v = (query as Record<string, unknown>)[name];
  if (v === undefined || v === 'false' || v === '0') return false;
  if (v === 'true' || v === '1' || v === '') return true;
  throw problem('validation_failed', `${name} must be true or false`);
}

/** POST reencrypt?kid=: multipart/mixed JWE in, the same layout for the target key out. */
function reencryptHandler(ctx: AppContext): RequestHandler {
  return streamedOperation(ctx, 'crypto.stream.reencrypt', async (op, req, res) => {
    const kid = (op.target = targetKid(req.query));
    const rotateContentKey = flag(req.query, 'rotateContentKey');
    op.details = { rotateContentKey };
    const boundary = mixedBoundary(req.headers['content-type']);
    if (!boundary)
      throw problem(
        'unsupported_media_type',
        'send the multipart/mixed result of convert-pkcs7-to-jose exactly as it was returned, with its boundary',
      );
    const reader = new MixedReader(op.countIn(rawBody(req)), boundary);
    const result = await reencryptStream(reader, {
      resolver: callerKeyResolver(ctx, req.auth, 'stream'),
      targetKid: kid,
      rotateContentKey,
    });
    op.bytesOut = await sendStreamed(res, labelFor(req, [result.contentType]), result.body);
    op.details = { sourceKid: result.sourceKid, rotateContentKey };
  });
}

/** POST resign?kid=: `signature` (the JWS object) then `file` (the content) in; a new JWS object out. */
function resignHandler(ctx: AppContext): RequestHandler {
  return streamedOperation(ctx, 'crypto.stream.resign', async (op, req, res) => {
    const kid = (op.target = targetKid(req.query));
    const form = (op.form = streamMultipart(req));
    const sig = await form.next();
    if (!sig || sig.name !== 'signature')
      throw problem(
        'validation_failed',
        'the signature part (the JWS object from convert) must come first, before the file part',
      );
    const resigning = await startResign(await sig.text(MAX_SIGNATURE_BYTES), {
      resolver: tenantKeyResolver(ctx, req.auth.tenantId, null),
      targetKid: kid,
    });
    const file = await form.next();
    if (!file || file.name !== 'file')
      throw problem(
        'validation_failed',
        'the file part (the signed content) is required after the signature part',
      );
    for await (const chunk of op.countIn(file.body)) resigning.update(chunk);
    const extra = await form.next();
    if (extra)
      throw problem(
        'validation_failed',
        `unexpected part ${extra.name.slice(0, 64)} after the file part`,
      );
    const jws = resigning.finish();
    const label = labelFor(req, ['application/octet-stream', 'application/json']);
    const body = Buffer.from(JSON.stringify(jws));
    res.status(200).type(label).send(body);
    op.bytesOut = body.length;
    op.details = { sourceKid: resigning.sourceKid };
  });
}

/** Mounted at /api/v3/crypto/stream. */
export function createCryptoStreamRouter(ctx: AppContext): Router {
  const router = Router();
  const mixed = ['multipart/mixed'];
  const jws = ['application/octet-stream', 'application/json'];
  route(router, '/reencrypt', {
    post: [
      // Re-encrypting opens the content key: it decrypts, so it needs crypto.decrypt too (contract 10).
      authorize(ctx, 'crypto.stream.reencrypt', 'crypto.decrypt'),
      apiRateLimit(ctx, 'crypto.stream.reencrypt'),
      acceptOneOf(mixed),
      responseSelection(mixed),
      reencryptHandler(ctx),
    ],
  });
  route(router, '/resign', {
    post: [
      authorize(ctx, 'crypto.stream.resign'),
      apiRateLimit(ctx, 'crypto.stream.resign'),
      acceptOneOf(jws),
      responseSelection(jws),
      resignHandler(ctx),
    ],
  });
  return router;
}
