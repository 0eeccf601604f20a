/**
 * The streaming PKCS#7/CMS endpoints (spec 4 and 4.1, contract 5), mounted at
 * /api/v3/migration/stream behind authenticate (both audiences; the permission decides); the
 * unversioned analyze alias is in api/routes/legacy/migration.ts. The input is never buffered
 * whole: it flows from the socket through the multipart scanner into the engine, and the
 * engine's output flows to the socket with backpressure, so memory stays flat whatever the size
 * (spec 8: no limit).
 */
import { Router, type Request, type RequestHandler } from 'express';
import type { AppContext } from '../../../context.ts';
import { route } from '../../../http/route.ts';
import { streamMultipart } from '../../../http/streaming-multipart.ts';
import { analyzeHandler } from '../../../http/pkcs7-analyze.ts';
import { streamedOperation } from '../../../http/streamed-operation.ts';
import { authorize } from '../../../middleware/authenticate.ts';
import { apiRateLimit } from '../../../middleware/rate-limit.ts';
import { callerKeyResolver } from '../../../services/crypto/decrypting-caller.ts';
import { readConversionForm, startConversion } from '../../../services/migration/convert.ts';
import { flattenedJwe } from '../../../services/migration/json-jwe.ts';
import {
  RESPONSE_TYPE_HEADER,
  acceptOneOf,
  checkedBeforeLast,
  labelFor,
  responseSelection,
  sendStreamed,
} from '../../../http/streaming.ts';

/** The response types of convert (contract 5): JWS object, multipart JWE, and the JWS labelled as JSON. */
export const CONVERT_TYPES = [
  'application/octet-stream',
  'multipart/mixed',
  'application/json',
  'application/jose+json',
] as const;

/**
 * True when the client asks for a SignedData's content beside its JWS: X-Response-Content-Type
 * multipart/mixed, or an Accept that prefers multipart/mixed to the JWS object's types (a bare
 * or wildcard Accept keeps the JWS-only default of contract 5).
 */
function wantsSignedContent(req: Request): boolean {
  const selected = req.headers[RESPONSE_TYPE_HEADER];
  if (typeof selected === 'string' && selected.trim().toLowerCase() === 'multipart/mixed')
    return true;
  if (!req.headers.accept) return false;
  return (
    req.accepts(['application/octet-stream', 'application/json', 'multipart/mixed']) ===
    'multipart/mixed'
  );
}

/** POST convert-pkcs7-to-jose: metadata, file (and content) in; JWS object or multipart JWE out. */
function convertHandler(ctx: AppContext): RequestHandler {
  return streamedOperation(ctx, 'migration.convert', async (op, req, res) => {
    const form = (op.form = streamMultipart(req));
    const request = await readConversionForm(form, (n) => (op.bytesIn += n));
    const result = await startConversion(
      request,
      callerKeyResolver(ctx, req.auth, 'conversion'),
      ctx.conversions,
      (type) => (op.details.inputType = type),
      wantsSignedContent(req),
    );
    const resultType = result.contentType.split(';')[0];
    op.details.resultType = resultType;
    const candidates =
      resultType === 'application/octet-stream'
        ? ['application/octet-stream', 'application/json', 'application/jose+json']
        : op.details.inputType === 'signedData'
          ? [result.contentType]
          : [result.contentType, 'application/jose+json'];
    let label: string;
    try {
      label = labelFor(req, candidates);
    } catch (err) {
      await result.body[Symbol.asyncIterator]().return?.();
      throw err;
    }
    if (label === 'application/jose+json' && resultType === 'multipart/mixed') {
      // Flattened JSON JWE: held whole (capped), so every failure is still a problem here.
      const json = await flattenedJwe(result, ctx.config.convertJsonMaxBytes);
      await request.checkNoMoreParts();
      res.status(200).setHeader('Content-Type', label).setHeader('Cache-Control', 'no-store');
      res.end(json);
      op.bytesOut = json.length;
      return;
    }
    op.bytesOut = await sendStreamed(
      res,
      label,
      checkedBeforeLast(result.body, () => request.checkNoMoreParts()),
    );
  });
}

/** Mounted at /api/v3/migration/stream. */
export function createMigrationStreamRouter(ctx: AppContext): Router {
  const router = Router();
  route(router, '/analyze-pkcs7', {
    post: [
      authorize(ctx, 'migration.analyze'),
      apiRateLimit(ctx, 'migration.analyze'),
      acceptOneOf(['application/json']),
      analyzeHandler(ctx),
    ],
  });
  route(router, '/convert-pkcs7-to-jose', {
    post: [
      authorize(ctx, 'migration.convert'),
      apiRateLimit(ctx, 'migration.convert'),
      acceptOneOf(CONVERT_TYPES),
      responseSelection(CONVERT_TYPES),
      convertHandler(ctx),
    ],
  });
  return router;
}
