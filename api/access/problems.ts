/**
 * The one place errors become responses: AppError → problem+json (RFC 7807),
 * OAuthError → {error, error_description} (RFC 6749 5.2). Anything else is a 500 whose
 * cause is logged and never sent. Transport-free: Express's error handler
 * (api/middleware/errors.ts), the runtime lane and the connection limits all render with these.
 */
import {
  AppError,
  OAuthError,
  problem,
  problemDocument,
  type ProblemCode,
} from '../../shared/errors/index.ts';
import { isDatabaseUnavailable } from '../../shared/db/knex.ts';
import type { Logger } from '../../shared/logger.ts';

/** The catalogued code for an http-errors status other than 400 (an error carries its code, never a status of its own). */
const CLIENT_ERROR_BY_STATUS = new Map<number, ProblemCode>([
  [401, 'unauthorized'],
  [403, 'forbidden'],
  [404, 'not_found'],
  [405, 'method_not_allowed'],
  [406, 'not_acceptable'],
  [413, 'payload_too_large'],
  [415, 'unsupported_media_type'],
  [422, 'unprocessable'],
  [429, 'rate_limited'],
]);

/** Maps body-parser and other http-errors style failures onto the catalogue. */
function fromHttpError(err: { type?: string; status?: number; message?: string }): AppError | null {
  switch (err.type) {
    case 'entity.parse.failed':
      return problem('malformed_json', 'the request body is not valid JSON');
    case 'entity.too.large':
      return problem(
        'payload_too_large',
        'the request body is larger than this endpoint accepts; use the stream endpoints for large data',
      );
    case 'charset.unsupported':
    case 'encoding.unsupported':
      return problem('unsupported_media_type', err.message ?? 'unsupported body encoding');
    case 'request.aborted':
      return problem('bad_request', 'the client aborted the request');
    default:
      // e.g. the router's URIError for a malformed percent-encoding in a path parameter (400);
      // a client error of another status keeps it through the catalogue's code for that status.
      if (typeof err.status === 'number' && err.status >= 400 && err.status < 500)
        return problem(
          CLIENT_ERROR_BY_STATUS.get(err.status) ?? 'bad_request',
          'the request path or its parameters are malformed',
        );
      return null;
  }
}

/** Seconds a client should wait before retrying while the database is away. */
const DATABASE_RETRY_AFTER = '5';

/** Any thrown value as the AppError it answers with: catalogued, mapped, or an internal error. */
export function toAppError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  if (isDatabaseUnavailable(err)) {
    return problem(
      'database_unavailable',
      'the database is not reachable right now; retry shortly',
      { headers: { 'Retry-After': DATABASE_RETRY_AFTER }, cause: err },
    );
  }
  return (
    fromHttpError(err as { type?: string; status?: number; message?: string }) ??
    problem('internal', 'unexpected failure', { cause: err })
  );
}

/** The RFC 7807 body of an AppError, rendered by the one shared renderer. */
export function problemBody(error: AppError, baseUrl: string, instance: string): string {
  return JSON.stringify(problemDocument(error, baseUrl, { instance }));
}

/** A problem response, transport-free: what Express (sendProblem) and the runtime lane both write. */
export function problemResponse(
  error: AppError,
  baseUrl: string,
  instance: string,
): { status: number; headers: Record<string, string>; body: string } {
  return {
    status: error.status,
    headers: { ...error.headers, 'Content-Type': 'application/problem+json; charset=utf-8' },
    body: problemBody(error, baseUrl, instance),
  };
}

/**
 * Any failure as an OAuthError: a catalogued problem keeps its code and status, a full pool is
 * temporarily_unavailable, and anything unexpected is a logged server_error whose cause never
 * leaves.
 */
export function oauthShaped(err: unknown, log: Pick<Logger, 'error'>): OAuthError {
  if (err instanceof OAuthError) return err;
  if (!(err instanceof AppError) && isDatabaseUnavailable(err)) err = toAppError(err);
  if (err instanceof AppError && err.status === 503)
    return new OAuthError('temporarily_unavailable', err.message, 503, err.headers);
  if (err instanceof AppError && err.expose)
    return new OAuthError(err.code, err.message, err.status, err.headers);
  const status = (err as { status?: unknown })?.status;
  if (typeof status === 'number' && status >= 400 && status < 500)
    return new OAuthError('invalid_request', 'the request is malformed', status);
  log.error({ err: (err as Error)?.message, stack: (err as Error)?.stack }, 'request failed');
  return new OAuthError(
    'server_error',
    'an unexpected error occurred; the request id identifies it in the logs',
    500,
  );
}

/** An OAuth error response, transport-free: what Express's error handler and the lane both write. */
export function oauthResponse(err: OAuthError): {
  status: number;
  headers: Record<string, string>;
  body: string;
} {
  return {
    status: err.status,
    headers: {
      ...err.headers,
      'Cache-Control': 'no-store',
      'Content-Type': 'application/json; charset=utf-8',
    },
    body: JSON.stringify({ error: err.error, error_description: err.message }),
  };
}

/** Logs a failure at the level its answer calls for: a warning for an absent database, an error with the stack for a 5xx, info for a refusal. */
export function logFailure(
  log: Pick<Logger, 'warn' | 'error' | 'info'>,
  err: unknown,
  error: AppError,
): void {
  if (error.code === 'database_unavailable')
    log.warn({ err: errMessage(err) }, 'database unreachable; answered 503');
  else if (error.status >= 500)
    log.error(
      { err: errMessage(err), stack: (err as Error)?.stack, code: error.code },
      'request failed',
    );
  else log.info({ code: error.code, status: error.status }, error.message);
}

/** The message of a thrown value, for a log line. */
export function errMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
