/**
 * The one place errors become responses: AppError → problem+json (RFC 7807, spec 2.5),
 * OAuthError → {error, error_description} (RFC 6749 5.2). Anything else is a 500 whose
 * cause is logged and never sent.
 */
import type { ErrorRequestHandler, RequestHandler, Response, Request } from 'express';
import { AppError, OAuthError } from '../../shared/errors/index.ts';
import { isDatabaseUnavailable } from '../../shared/db/knex.ts';

/** Maps body-parser and other http-errors style failures onto the catalogue. */
function fromHttpError(err: { type?: string; status?: number; message?: string }): AppError | null {
  switch (err.type) {
    case 'entity.parse.failed':
      return new AppError('malformed_json', 'the request body is not valid JSON');
    case 'entity.too.large':
      return new AppError('payload_too_large', 'the request body is larger than this endpoint accepts; use the stream endpoints for large data');
    case 'charset.unsupported':
    case 'encoding.unsupported':
      return new AppError('unsupported_media_type', err.message ?? 'unsupported body encoding');
    case 'request.aborted':
      return new AppError('bad_request', 'the client aborted the request');
    default:
      // e.g. the router's URIError for a malformed percent-encoding in a path parameter.
      if (typeof err.status === 'number' && err.status >= 400 && err.status < 500) return new AppError('bad_request', 'the request path or its parameters are malformed', { status: err.status });
      return null;
  }
}

/** Seconds a client should wait before retrying while the database is away. */
const DATABASE_RETRY_AFTER = '5';

/** Any thrown value as the AppError it answers with: catalogued, mapped, or an internal error. */
export function toAppError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  if (isDatabaseUnavailable(err)) {
    return new AppError('database_unavailable', 'the database is not reachable right now; retry shortly', { headers: { 'Retry-After': DATABASE_RETRY_AFTER }, cause: err });
  }
  return fromHttpError(err as { type?: string; status?: number; message?: string }) ?? new AppError('internal', 'unexpected failure', { cause: err });
}

/** The RFC 7807 body of an AppError (spec 2.5); internals never leave for 5xx. */
export function problemBody(error: AppError, baseUrl: string, instance: string): string {
  return JSON.stringify({
    type: `${baseUrl}/problems/${error.slug}`,
    title: error.title,
    status: error.status,
    detail: error.expose ? error.message : 'an unexpected error occurred; the request id identifies it in the logs',
    instance,
    ...(error.expose && error.details ? error.details : {}),
  });
}

/** Writes a problem+json response for an AppError. */
export function sendProblem(req: Request, res: Response, error: AppError, baseUrl: string): void {
  if (error.headers) for (const [k, v] of Object.entries(error.headers)) res.setHeader(k, v);
  res.status(error.status).type('application/problem+json').send(problemBody(error, baseUrl, req.originalUrl.split('?')[0]));
}

/** The error middleware; `baseUrl` is PUBLIC_BASE_URL. */
export function errorHandler(baseUrl: string): ErrorRequestHandler {
  return (err, req, res, _next) => {
    if (res.headersSent) {
      // A streamed response already began: cut it so the client cannot take it for a whole result.
      req.log.warn({ err: errMessage(err), code: (err as AppError)?.code }, 'failure after the response began; connection cut');
      res.destroy();
      return;
    }
    if (err instanceof OAuthError) {
      if (err.headers) for (const [k, v] of Object.entries(err.headers)) res.setHeader(k, v);
      res.setHeader('Cache-Control', 'no-store');
      res.status(err.status).json({ error: err.error, error_description: err.message });
      return;
    }
    const error = toAppError(err);
    if (error.code === 'database_unavailable') req.log.warn({ err: errMessage(err) }, 'database unreachable; answered 503');
    else if (error.status >= 500) req.log.error({ err: errMessage(err), stack: (err as Error)?.stack, code: error.code }, 'request failed');
    else req.log.info({ code: error.code, status: error.status }, error.message);
    sendProblem(req, res, error, baseUrl);
  };
}

function errMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Final handler: no route matched the path. */
export const notFound: RequestHandler = (req, _res, next) => {
  next(new AppError('not_found', `no endpoint at ${req.method} ${req.path}`));
};
