/**
 * The error tree. Every failure the service reports is an AppError with a stable `code`,
 * an HTTP `status`, a problem `slug` (RFC 7807 type suffix) and a `title`. One middleware turns
 * them into problem+json; auth endpoints use OAuthError instead (RFC 6749 section 5.2).
 */
export interface ErrorData {
  code: string;
  message: string;
  details?: Record<string, unknown>;
  /** Carried so that codes outside PROBLEMS (e.g. keystore, pkcs7) keep their status across threads. */
  status?: number;
  slug?: string;
  title?: string;
}

export interface ProblemSpec {
  status: number;
  slug: string;
  title: string;
}

/** The problem catalogue: one row per stable code. */
export const PROBLEMS = {
  bad_request: { status: 400, slug: 'bad-request', title: 'Bad Request' },
  malformed_json: { status: 400, slug: 'malformed-json', title: 'Malformed JSON' },
  validation_failed: { status: 400, slug: 'validation-failed', title: 'Validation Failed' },
  unauthorized: { status: 401, slug: 'unauthorized', title: 'Unauthorized' },
  forbidden: { status: 403, slug: 'forbidden', title: 'Forbidden' },
  not_found: { status: 404, slug: 'not-found', title: 'Not Found' },
  key_not_found: { status: 404, slug: 'key-not-found', title: 'Key Not Found' },
  method_not_allowed: { status: 405, slug: 'method-not-allowed', title: 'Method Not Allowed' },
  not_acceptable: { status: 406, slug: 'not-acceptable', title: 'Not Acceptable' },
  conflict: { status: 409, slug: 'conflict', title: 'Conflict' },
  key_suspended: { status: 409, slug: 'key-suspended', title: 'Key Suspended' },
  key_revoked: { status: 409, slug: 'key-revoked', title: 'Key Revoked' },
  invalid_transition: { status: 409, slug: 'invalid-transition', title: 'Invalid State Transition' },
  key_version_retired: { status: 409, slug: 'key-version-retired', title: 'Key Version Retired' },
  payload_too_large: { status: 413, slug: 'payload-too-large', title: 'Payload Too Large' },
  unsupported_media_type: { status: 415, slug: 'unsupported-media-type', title: 'Unsupported Media Type' },
  unprocessable: { status: 422, slug: 'unprocessable', title: 'Unprocessable Entity' },
  key_usage_mismatch: { status: 422, slug: 'key-usage-mismatch', title: 'Key Usage Mismatch' },
  policy_violation: { status: 422, slug: 'policy-violation', title: 'Policy Violation' },
  decryption_failed: { status: 400, slug: 'decryption-failed', title: 'Decryption Failed' },
  rate_limited: { status: 429, slug: 'rate-limited', title: 'Too Many Requests' },
  internal: { status: 500, slug: 'internal-error', title: 'Internal Server Error' },
  pool_busy: { status: 503, slug: 'service-busy', title: 'Service Busy' },
  queue_unavailable: { status: 503, slug: 'queue-unavailable', title: 'Queue Unavailable' },
  unavailable: { status: 503, slug: 'service-unavailable', title: 'Service Unavailable' },
  database_unavailable: { status: 503, slug: 'database-unavailable', title: 'Database Unavailable' },
} as const satisfies Record<string, ProblemSpec>;

export type ProblemCode = keyof typeof PROBLEMS;

/** An error with a stable code; `expose` says whether its message may reach the client. */
export class AppError extends Error {
  readonly code: string;
  readonly status: number;
  readonly slug: string;
  readonly title: string;
  readonly details?: Record<string, unknown>;
  /** Extra response headers, e.g. Retry-After. */
  readonly headers?: Record<string, string>;

  constructor(
    code: string,
    message: string,
    opts: { status?: number; slug?: string; title?: string; details?: Record<string, unknown>; headers?: Record<string, string>; cause?: unknown } = {},
  ) {
    super(message, { cause: opts.cause });
    const known = (PROBLEMS as Record<string, ProblemSpec>)[code];
    this.name = 'AppError';
    this.code = code;
    this.status = opts.status ?? known?.status ?? 500;
    this.slug = opts.slug ?? known?.slug ?? code.replaceAll('_', '-');
    this.title = opts.title ?? known?.title ?? 'Error';
    this.details = opts.details;
    this.headers = opts.headers;
  }

  get expose(): boolean {
    return this.status < 500;
  }

  /** Plain data for crossing a thread or process boundary (conventions rule 4). */
  toJSON(): ErrorData {
    return { code: this.code, message: this.message, details: this.details, status: this.status, slug: this.slug, title: this.title };
  }
}

/** Builds the AppError for a catalogued code. */
export function problem(code: ProblemCode, message: string, details?: Record<string, unknown>): AppError {
  return new AppError(code, message, { details });
}

/**
 * The builder for a module's own problem table (keystore, CMS engine, JOSE streams): each table
 * has the shape of PROBLEMS, and its errors carry their status, slug and title with them so they
 * survive a thread or process boundary. `cause` is for the log only (conventions rule 3).
 */
export function problemBuilder<T extends Record<string, ProblemSpec>>(table: T) {
  return (code: keyof T & string, message: string, opts: { details?: Record<string, unknown>; cause?: unknown } = {}): AppError =>
    new AppError(code, message, { ...table[code], ...opts });
}

/** Rebuilds an error that crossed a boundary as plain data; unknown shapes become internal errors. */
export function errorFromData(data: unknown): AppError {
  if (data && typeof data === 'object' && 'code' in data && typeof (data as ErrorData).code === 'string') {
    const d = data as ErrorData;
    return new AppError(d.code, String(d.message ?? d.code), { details: d.details, status: d.status, slug: d.slug, title: d.title });
  }
  return new AppError('internal', 'unexpected worker failure');
}

/** OAuth 2.0 error for the auth endpoints: `{error, error_description}` (RFC 6749 section 5.2). */
export class OAuthError extends Error {
  readonly error: string;
  readonly status: number;
  readonly headers?: Record<string, string>;

  constructor(error: string, description: string, status = 400, headers?: Record<string, string>) {
    super(description);
    this.name = 'OAuthError';
    this.error = error;
    this.status = status;
    this.headers = headers;
  }
}
