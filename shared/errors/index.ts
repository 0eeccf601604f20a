/**
 * The error tree. Every failure the service reports is an AppError whose `code` is a row of the
 * catalogue (catalogue.ts): the code alone gives its status, problem slug and title, so there is
 * no way to build an error the catalogue does not know. Errors cross threads and processes as
 * plain `{code, message, details}` and are rebuilt by code. Auth endpoints
 * use OAuthError instead (RFC 6749 section 5.2).
 */
import {
  OAUTH_ERRORS,
  PROBLEMS,
  isProblemCode,
  type OAuthCode,
  type ProblemCode,
  type ProblemSpec,
} from './catalogue.ts';

export {
  OAUTH_ERRORS,
  PROBLEM_AREAS,
  PROBLEMS,
  isProblemCode,
  type OAuthCode,
  type ProblemCode,
  type ProblemSpec,
} from './catalogue.ts';

/** An error as plain data, the only shape that crosses a thread or process boundary. */
export interface ErrorData {
  code: string;
  message: string;
  details?: Record<string, unknown>;
}

/** What an error carries beyond its code and message. */
export interface ProblemOptions {
  /** Members added to the problem body (only when the message may reach the client). */
  details?: Record<string, unknown>;
  /** For the log only. */
  cause?: unknown;
  /** Extra response headers, e.g. Retry-After. */
  headers?: Record<string, string>;
}

/** An error with a catalogued code; `expose` says whether its message may reach the client. */
export class AppError extends Error {
  readonly code: ProblemCode;
  readonly status: number;
  readonly slug: string;
  readonly title: string;
  readonly details?: Record<string, unknown>;
  readonly headers?: Record<string, string>;

  constructor(code: ProblemCode, message: string, opts: ProblemOptions = {}) {
    super(message, { cause: opts.cause });
    const spec: ProblemSpec = PROBLEMS[code];
    this.name = 'AppError';
    this.code = code;
    this.status = spec.status;
    this.slug = spec.slug;
    this.title = spec.title;
    this.details = opts.details;
    this.headers = opts.headers;
  }

  get expose(): boolean {
    return this.status < 500;
  }

  /** Plain data for crossing a thread or process boundary. */
  toJSON(): ErrorData {
    return {
      code: this.code,
      message: this.message,
      ...(this.details ? { details: this.details } : {}),
    };
  }
}

/** Builds the AppError for a catalogued code: the one constructor every area uses. */
export function problem(code: ProblemCode, message: string, opts?: ProblemOptions): AppError {
  return new AppError(code, message, opts);
}

/**
 * The one answer for every failure to open a ciphertext (wrong key, bad tag, bad padding): the
 * opaque decryption-failed, the cause only in the log (RFC 7516 section 11.5).
 */
export function decryptionFailed(cause?: unknown): AppError {
  return new AppError('decryption_failed', 'the content could not be decrypted', { cause });
}

/** Codes of a key looked for in one tenant and not found there. */
const NOT_IN_TENANT = new Set<string>(['key_not_found', 'cms_key_not_imported']);

/**
 * The error with the tenant that was searched named in its message, for the problems of a key
 * not found: told only "no recipient key is imported", an operator cannot see that the request
 * ran in another tenant than the one holding the keys. The tenant is the caller's own (its token's,
 * or the Admin path's it may act on), so this says nothing it did not know. Other errors are
 * returned as they are.
 */
export function namingTenant<E>(err: E, tenantId: string | undefined): E | AppError {
  if (!tenantId || !(err instanceof AppError) || !NOT_IN_TENANT.has(err.code)) return err;
  if (err.message.includes(tenantId)) return err;
  const message = err.message.includes(' in this tenant')
    ? err.message.replace(' in this tenant', ` in tenant ${tenantId}`)
    : `${err.message} in tenant ${tenantId}`;
  return new AppError(err.code, message, {
    details: err.details,
    headers: err.headers,
    cause: err.cause ?? err,
  });
}

/**
 * Rebuilds an error that crossed a boundary as plain data, by its code; a shape that is not
 * ours, or a code the catalogue does not hold, becomes an internal error.
 */
export function errorFromData(data: unknown): AppError {
  if (data && typeof data === 'object' && isProblemCode((data as ErrorData).code)) {
    const d = data as ErrorData;
    const details = d.details && typeof d.details === 'object' ? d.details : undefined;
    return new AppError(d.code as ProblemCode, String(d.message ?? d.code), { details });
  }
  return new AppError('internal', 'unexpected worker failure');
}

/**
 * An error as the plain data that crosses a boundary (the other side of errorFromData): only an
 * AppError-shaped error keeps its code, message and details; anything else is an internal error.
 */
export function errorToData(err: unknown): ErrorData {
  const e = err as { code?: unknown; status?: unknown; toJSON?: () => ErrorData };
  if (typeof e?.toJSON === 'function' && typeof e.code === 'string' && typeof e.status === 'number')
    return e.toJSON();
  return errorFromData(undefined).toJSON();
}

/** OAuth 2.0 error for the auth endpoints: `{error, error_description}` (RFC 6749 section 5.2). */
export class OAuthError extends Error {
  readonly error: OAuthCode | ProblemCode;
  readonly status: number;
  readonly headers?: Record<string, string>;

  constructor(
    error: OAuthCode | ProblemCode,
    description: string,
    status?: number,
    headers?: Record<string, string>,
  ) {
    super(description);
    this.name = 'OAuthError';
    this.error = error;
    this.status =
      status ??
      (Object.hasOwn(OAUTH_ERRORS, error) ? OAUTH_ERRORS[error as OAuthCode].status : 400);
    this.headers = headers;
  }
}

// The one RFC 7807 rendering: HTTP problem responses on both lanes, failed items of a
// batch, bulk key operations and the problems of queued jobs all have this shape, so a client
// reads a failure the same way wherever it meets one.

/** A problem details object (RFC 7807 section 3.1) plus the error's detail members. */
export interface ProblemDocument {
  type: string;
  title: string;
  status: number;
  detail: string;
  instance?: string;
  [member: string]: unknown;
}

/** What a 5xx says instead of its message (the cause is in the log, never in the answer). */
const HIDDEN = 'an unexpected error occurred; the request id identifies it in the logs';

/** How to render. */
export interface RenderOptions {
  /** The request path (RFC 7807 section 3.1); omitted for items of a larger answer. */
  instance?: string;
  /**
   * The message was already made safe where the error was recorded (a job's problem is sanitised
   * by the worker, which alone sees the cause), so it is shown whatever the status.
   */
  safeMessage?: boolean;
}

/** The RFC 7807 object of an error; `baseUrl` is PUBLIC_BASE_URL. Internals never leave for 5xx. */
export function problemDocument(
  error: AppError,
  baseUrl: string,
  opts: RenderOptions = {},
): ProblemDocument {
  const shown = error.expose || opts.safeMessage === true;
  return {
    type: `${baseUrl}/problems/${error.slug}`,
    title: error.title,
    status: error.status,
    detail: shown ? error.message : HIDDEN,
    ...(opts.instance !== undefined ? { instance: opts.instance } : {}),
    ...(shown && error.details ? error.details : {}),
  };
}
