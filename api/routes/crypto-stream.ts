/**
 * Stream re-encryption and re-signing of convert results (contract 5), mounted at
 * /api/v3/crypto/stream behind the service-core bearer check. Both take the output of convert
 * exactly as it was returned and stream it: the JWE ciphertext flows through with backpressure,
 * the JWS content is hashed as it arrives.
 */
import { Router, type RequestHandler } from 'express';
import type { AppContext } from '../context.ts';
import { route } from '../http/route.ts';
import { streamMultipart, type StreamingForm } from '../http/streaming-multipart.ts';
import { authorize } from '../middleware/authenticate.ts';
import { apiRateLimit } from '../middleware/rate-limit.ts';
import { tenantKeyResolver } from '../services/keys/cms-resolver.ts';
import { MixedReader, mixedBoundary } from '../services/migration/mixed-reader.ts';
import { reencryptStream } from '../services/migration/reencrypt.ts';
import { startResign } from '../services/migration/resign.ts';
import {
  abandonRaw, acceptOneOf, counted, labelFor, rawBody, reportOperation, responseSelection, sendStreamed,
} from '../services/migration/streaming-http.ts';
import { AppError } from '../../shared/errors/index.ts';

const MAX_SIGNATURE_BYTES = 64 * 1024;

/** The `kid` query parameter: the target key. */
function targetKid(query: unknown): string {
  const kid = (query as Record<string, unknown>).kid;
  if (typeof kid !== 'string' || kid === '' || kid.length > 256) throw new AppError('validation_failed', 'the kid query parameter (the target key) is required');
  return kid;
}

function flag(query: unknown, name: string): boolean {
  const v = (query as Record<string, unknown>)[name];
  if (v === undefined || v === 'false' || v === '0') return false;
  if (v === 'true' || v === '1' || v === '') return true;
  throw new AppError('validation_failed', `${name} must be true or false`);
}

/** POST reencrypt?kid=: multipart/mixed JWE in, the same layout for the target key out. */
function reencryptHandler(ctx: AppContext): RequestHandler {
  return async (req, res) => {
    const started = performance.now();
    let kid: string | null = null;
    let rotateContentKey = false;
    let bytesIn = 0;
    let bytesOut = 0;
    try {
      kid = targetKid(req.query);
      rotateContentKey = flag(req.query, 'rotateContentKey');
      const boundary = mixedBoundary(req.headers['content-type']);
      if (!boundary) throw new AppError('unsupported_media_type', 'send the multipart/mixed result of convert-pkcs7-to-jose exactly as it was returned, with its boundary');
      const reader = new MixedReader(counted(rawBody(req), (n) => (bytesIn += n)), boundary);
      const result = await reencryptStream(reader, { resolver: tenantKeyResolver(ctx, req.auth.tenantId), targetKid: kid, rotateContentKey });
      bytesOut = await sendStreamed(res, labelFor(req, [result.contentType]), result.body);
      reportOperation(ctx, req, { action: 'crypto.stream.reencrypt', started, bytesIn, bytesOut, target: kid, details: { sourceKid: result.sourceKid, rotateContentKey } });
    } catch (err) {
      abandonRaw(req, res);
      reportOperation(ctx, req, { action: 'crypto.stream.reencrypt', started, bytesIn, bytesOut, target: kid, error: err, details: { rotateContentKey, cut: res.headersSent } });
      throw err;
    }
  };
}

/** POST resign?kid=: `signature` (the JWS object) then `file` (the content) in; a new JWS object out. */
function resignHandler(ctx: AppContext): RequestHandler {
  return async (req, res) => {
    const started = performance.now();
    let kid: string | null = null;
    let bytesIn = 0;
    let form: StreamingForm | null = null;
    try {
      kid = targetKid(req.query);
      form = streamMultipart(req);
      const sig = await form.next();
      if (!sig || sig.name !== 'signature') throw new AppError('validation_failed', 'the signature part (the JWS object from convert) must come first, before the file part');
      const resigning = await startResign(await sig.text(MAX_SIGNATURE_BYTES), { resolver: tenantKeyResolver(ctx, req.auth.tenantId), targetKid: kid });
      const file = await form.next();
      if (!file || file.name !== 'file') throw new AppError('validation_failed', 'the file part (the signed content) is required after the signature part');
      for await (const chunk of file.body) {
        bytesIn += chunk.length;
        resigning.update(chunk);
      }
      const extra = await form.next();
      if (extra) throw new AppError('validation_failed', `unexpected part ${extra.name.slice(0, 64)} after the file part`);
      const jws = resigning.finish();
      const label = labelFor(req, ['application/octet-stream', 'application/json']);
      const body = Buffer.from(JSON.stringify(jws));
      res.status(200).type(label).send(body);
      reportOperation(ctx, req, { action: 'crypto.stream.resign', started, bytesIn, bytesOut: body.length, target: kid, details: { sourceKid: resigning.sourceKid } });
    } catch (err) {
      if (form) form.abandon(res);
      else abandonRaw(req, res);
      reportOperation(ctx, req, { action: 'crypto.stream.resign', started, bytesIn, bytesOut: 0, target: kid, error: err });
      throw err;
    }
  };
}

/** Mounted at /api/v3/crypto/stream. */
export function createCryptoStreamRouter(ctx: AppContext): Router {
  const router = Router();
  const mixed = ['multipart/mixed'];
  const jws = ['application/octet-stream', 'application/json'];
  route(router, '/reencrypt', {
    post: [authorize(ctx, 'crypto.stream.reencrypt'), apiRateLimit(ctx, 'crypto.stream.reencrypt'), acceptOneOf(mixed), responseSelection(mixed), reencryptHandler(ctx)],
  });
  route(router, '/resign', {
    post: [authorize(ctx, 'crypto.stream.resign'), apiRateLimit(ctx, 'crypto.stream.resign'), acceptOneOf(jws), responseSelection(jws), resignHandler(ctx)],
  });
  return router;
}
