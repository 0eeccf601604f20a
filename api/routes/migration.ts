/**
 * The streaming PKCS#7/CMS endpoints (spec 4 and 4.1, contract 5), mounted at
 * /api/v3/migration/stream behind authenticate (both audiences; the permission decides), and the
 * unversioned analyze alias of spec 4 at the application root. The input is never buffered
 * whole: it flows from the socket through busboy into the engine, and the engine's output flows
 * to the socket with backpressure, so memory stays flat whatever the size (spec 8: no limit).
 */
import { Router, type Request, type RequestHandler, type Response } from 'express';
import type { AppContext } from '../context.ts';
import { route } from '../http/route.ts';
import { isMultipartForm, streamMultipart, type StreamingForm } from '../http/streaming-multipart.ts';
import { authenticate, authorize } from '../middleware/authenticate.ts';
import { apiRateLimit } from '../middleware/rate-limit.ts';
import { AUDIENCE_ADMIN, AUDIENCE_CORE } from '../services/auth/access-tokens.ts';
import { tenantKeyResolver } from '../services/keys/cms-resolver.ts';
import { readConversionForm, startConversion } from '../services/migration/convert.ts';
import {
  abandonRaw, acceptOneOf, checkedBeforeLast, counted, labelFor, rawBody, reportOperation, responseSelection, sendStreamed,
} from '../services/migration/streaming-http.ts';
import { analyzePkcs7 } from '../../shared/pkcs7/index.ts';
import { AppError } from '../../shared/errors/index.ts';

export const ANALYZE_ALIAS_PATH = '/api/migration/stream/analyze-pkcs7';

/** Media types a raw (non-multipart) analyze body may have (RFC 8551 section 3.2.1, RFC 5751). */
const RAW_TYPES = ['application/pkcs7-mime', 'application/x-pkcs7-mime', 'application/pkcs7-signature', 'application/x-pkcs7-signature', 'application/octet-stream'];

/** The response types of convert (contract 5): JWS object, multipart JWE, and the JWS labelled as JSON. */
export const CONVERT_TYPES = ['application/octet-stream', 'multipart/mixed', 'application/json'] as const;

/** The `file` part of a form: other parts (a metadata part sent out of habit) are skipped. */
async function filePartOf(form: StreamingForm): Promise<AsyncIterable<Buffer>> {
  for (let part = await form.next(); part; part = await form.next()) {
    if (part.name === 'file') return part.body;
  }
  throw new AppError('validation_failed', 'the file part (the PKCS#7/CMS file) is required');
}

/** The raw (non-multipart) body, after its media type is checked. */
function rawInput(req: Request): AsyncIterable<Buffer> {
  if (!req.is(RAW_TYPES)) {
    throw new AppError('unsupported_media_type', `send multipart/form-data with a file part, or the file itself as ${RAW_TYPES.join(', ')}`);
  }
  return rawBody(req);
}

/** POST analyze-pkcs7: the JSON analysis of contract 5, read in one streaming pass. */
function analyzeHandler(ctx: AppContext): RequestHandler {
  return async (req, res) => {
    const started = performance.now();
    let bytesIn = 0;
    let form: StreamingForm | null = null;
    try {
      // The form is held from its start, so a failure while its parts are read still abandons it
      // (the reader stops reading ahead and discards the rest) before the problem is written.
      form = isMultipartForm(req) ? streamMultipart(req) : null;
      const input = form ? await filePartOf(form) : rawInput(req);
      const analysis = await analyzePkcs7(counted(input, (n) => (bytesIn += n)), tenantKeyResolver(ctx, req.auth.tenantId));
      // Parts after `file` are not read; the connection closes instead of waiting on them.
      if (form) form.abandon(res);
      const body = JSON.stringify(analysis);
      res.status(200).type('application/json').send(body);
      reportOperation(ctx, req, { action: 'migration.analyze', started, bytesIn, bytesOut: body.length, details: { contentType: analysis.contentType, convertible: analysis.convertible } });
    } catch (err) {
      giveUp(req, res, form);
      reportOperation(ctx, req, { action: 'migration.analyze', started, bytesIn, bytesOut: 0, error: err });
      throw err;
    }
  };
}

/** After a failure: stop reading the request in a way the client still sees the answer. */
function giveUp(req: Request, res: Response, form: StreamingForm | null): void {
  if (form) form.abandon(res);
  else abandonRaw(req, res);
}

/** POST convert-pkcs7-to-jose: metadata, file (and content) in; JWS object or multipart JWE out. */
function convertHandler(ctx: AppContext): RequestHandler {
  return async (req, res) => {
    const started = performance.now();
    let bytesIn = 0;
    let bytesOut = 0;
    let form: StreamingForm | null = null;
    let resultType: string | undefined;
    try {
      form = streamMultipart(req);
      const request = await readConversionForm(form, (n) => (bytesIn += n));
      const result = await startConversion(request, tenantKeyResolver(ctx, req.auth.tenantId));
      resultType = result.contentType.split(';')[0];
      const candidates = resultType === 'application/octet-stream' ? ['application/octet-stream', 'application/json'] : [result.contentType];
      let label: string;
      try {
        label = labelFor(req, candidates);
      } catch (err) {
        await result.body[Symbol.asyncIterator]().return?.();
        throw err;
      }
      bytesOut = await sendStreamed(res, label, checkedBeforeLast(result.body, () => request.checkNoMoreParts()));
      reportOperation(ctx, req, { action: 'migration.convert', started, bytesIn, bytesOut, details: { resultType } });
    } catch (err) {
      giveUp(req, res, form);
      reportOperation(ctx, req, { action: 'migration.convert', started, bytesIn, bytesOut, error: err, details: { resultType, cut: res.headersSent } });
      throw err;
    }
  };
}

/** Mounted at /api/v3/migration/stream. */
export function createMigrationStreamRouter(ctx: AppContext): Router {
  const router = Router();
  route(router, '/analyze-pkcs7', {
    post: [authorize(ctx, 'migration.analyze'), apiRateLimit(ctx, 'migration.analyze'), acceptOneOf(['application/json']), analyzeHandler(ctx)],
  });
  route(router, '/convert-pkcs7-to-jose', {
    post: [
      authorize(ctx, 'migration.convert'), apiRateLimit(ctx, 'migration.convert'), acceptOneOf(CONVERT_TYPES), responseSelection(CONVERT_TYPES), convertHandler(ctx),
    ],
  });
  return router;
}

/** The unversioned alias of analyze (spec 4), with its own bearer check; mounted at the root. */
export function createMigrationAliasRouter(ctx: AppContext): Router {
  const router = Router();
  route(router, ANALYZE_ALIAS_PATH, {
    post: [
      authenticate(ctx, [AUDIENCE_ADMIN, AUDIENCE_CORE]), authorize(ctx, 'migration.analyze'), apiRateLimit(ctx, 'migration.analyze'),
      acceptOneOf(['application/json']), analyzeHandler(ctx),
    ],
  });
  return router;
}
