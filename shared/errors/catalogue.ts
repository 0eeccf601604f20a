/**
 * The problem catalogue: every code the service can answer with, its HTTP status, its problem
 * slug (the RFC 7807 `type` is `{PUBLIC_BASE_URL}/problems/<slug>`) and its title, grouped by
 * area in one table (as fastify's lib/errors.js). An error is built from its code alone, so a
 * code that crossed a thread or process boundary is rebuilt here with the same answer.
 */

/** What a code answers with. */
export interface ProblemSpec {
  readonly status: number;
  readonly slug: string;
  readonly title: string;
}

/** Requests the HTTP edge refuses before any area looks at them. */
const GENERAL = {
  bad_request: { status: 400, slug: 'bad-request', title: 'Bad Request' },
  malformed_json: { status: 400, slug: 'malformed-json', title: 'Malformed JSON' },
  validation_failed: { status: 400, slug: 'validation-failed', title: 'Validation Failed' },
  not_found: { status: 404, slug: 'not-found', title: 'Not Found' },
  method_not_allowed: { status: 405, slug: 'method-not-allowed', title: 'Method Not Allowed' },
  not_acceptable: { status: 406, slug: 'not-acceptable', title: 'Not Acceptable' },
  conflict: { status: 409, slug: 'conflict', title: 'Conflict' },
  payload_too_large: { status: 413, slug: 'payload-too-large', title: 'Payload Too Large' },
  unsupported_media_type: {
    status: 415,
    slug: 'unsupported-media-type',
    title: 'Unsupported Media Type',
  },
  unprocessable: { status: 422, slug: 'unprocessable', title: 'Unprocessable Entity' },
  rate_limited: { status: 429, slug: 'rate-limited', title: 'Too Many Requests' },
  internal: { status: 500, slug: 'internal-error', title: 'Internal Server Error' },
  pool_busy: { status: 503, slug: 'service-busy', title: 'Service Busy' },
  unavailable: { status: 503, slug: 'service-unavailable', title: 'Service Unavailable' },
  database_unavailable: {
    status: 503,
    slug: 'database-unavailable',
    title: 'Database Unavailable',
  },
} as const;

/** Bearer authentication and the account flows of the non-OAuth endpoints (401/403 carry no `error` member). */
const AUTH = {
  unauthorized: { status: 401, slug: 'unauthorized', title: 'Unauthorized' },
  forbidden: { status: 403, slug: 'forbidden', title: 'Forbidden' },
  invalid_reset_token: { status: 400, slug: 'invalid-reset-token', title: 'Invalid Reset Token' },
} as const;

/** Keys, their states and versions (contract 3), policies and key exchanges. */
const KEYS = {
  key_not_found: { status: 404, slug: 'key-not-found', title: 'Key Not Found' },
  key_suspended: { status: 409, slug: 'key-suspended', title: 'Key Suspended' },
  key_revoked: { status: 409, slug: 'key-revoked', title: 'Key Revoked' },
  invalid_transition: {
    status: 409,
    slug: 'invalid-transition',
    title: 'Invalid State Transition',
  },
  key_version_retired: { status: 409, slug: 'key-version-retired', title: 'Key Version Retired' },
  key_usage_mismatch: { status: 422, slug: 'key-usage-mismatch', title: 'Key Usage Mismatch' },
  policy_violation: { status: 422, slug: 'policy-violation', title: 'Policy Violation' },
  exchange_not_pending: {
    status: 409,
    slug: 'exchange-not-pending',
    title: 'Exchange Not Pending',
  },
  exchange_expired: { status: 410, slug: 'exchange-expired', title: 'Exchange Expired' },
} as const;

/**
 * Cryptography. Every failure to open a ciphertext (wrong key, bad tag or padding, wrong context)
 * is this one opaque code, the cause only in the log (conventions rule 3, RFC 7516 section 11.5);
 * the CMS engine's former 422 cms-decryption-failed is the same failure, so it answers the same.
 */
const CRYPTO = {
  decryption_failed: { status: 400, slug: 'decryption-failed', title: 'Decryption Failed' },
} as const;

/** The PKCS#7/CMS engine. */
const CMS = {
  cms_malformed: { status: 400, slug: 'cms-malformed', title: 'Malformed CMS' },
  cms_truncated: { status: 400, slug: 'cms-truncated', title: 'Truncated CMS' },
  cms_unsupported: { status: 415, slug: 'cms-unsupported', title: 'Unsupported CMS Content' },
  cms_too_large: { status: 413, slug: 'cms-element-too-large', title: 'CMS Element Too Large' },
  cms_key_not_imported: {
    status: 404,
    slug: 'cms-key-not-imported',
    title: 'CMS Key Not Imported',
  },
  cms_key_unusable: { status: 422, slug: 'cms-key-unusable', title: 'CMS Key Unusable' },
  cms_signature_invalid: {
    status: 422,
    slug: 'cms-signature-invalid',
    title: 'CMS Signature Invalid',
  },
  cms_eddsa_too_large: {
    status: 422,
    slug: 'cms-eddsa-content-too-large',
    title: 'Content Too Large For EdDSA',
  },
  cms_bad_metadata: { status: 400, slug: 'cms-bad-metadata', title: 'Bad Conversion Metadata' },
} as const;

/** The JOSE stream endpoints (re-encrypt, re-sign: contract 5). */
const STREAM = {
  jose_malformed: { status: 400, slug: 'jose-malformed', title: 'Malformed JOSE Input' },
  jose_unsupported: { status: 415, slug: 'jose-unsupported', title: 'Unsupported JOSE Input' },
  signature_invalid: { status: 422, slug: 'signature-invalid', title: 'Signature Invalid' },
  jose_too_large: {
    status: 422,
    slug: 'jose-content-too-large',
    title: 'Content Too Large For EdDSA',
  },
} as const;

/** Keystore imports (PKCS#12, PEM). */
const KEYSTORE = {
  keystore_password_invalid: {
    status: 400,
    slug: 'keystore-password-invalid',
    title: 'Keystore Password Invalid',
  },
  keystore_malformed: { status: 400, slug: 'keystore-malformed', title: 'Malformed Keystore' },
  keystore_unsupported_algorithm: {
    status: 415,
    slug: 'keystore-unsupported-algorithm',
    title: 'Unsupported Keystore Algorithm',
  },
  keystore_empty: { status: 400, slug: 'keystore-empty', title: 'Keystore Holds No Private Key' },
  keystore_key_mismatch: {
    status: 400,
    slug: 'keystore-key-mismatch',
    title: 'Certificate Does Not Match Key',
  },
  keystore_key_invalid: {
    status: 400,
    slug: 'keystore-key-invalid',
    title: 'Inconsistent Key Pair',
  },
  keystore_too_large: { status: 413, slug: 'keystore-too-large', title: 'Keystore Too Large' },
} as const;

/** Object storage; `details.transient` says whether a job retry can help. */
const STORAGE = {
  storage_unavailable: { status: 503, slug: 'storage-unavailable', title: 'Storage Unavailable' },
} as const;

/** Queued jobs (contract 6). */
const JOBS = {
  queue_unavailable: { status: 503, slug: 'queue-unavailable', title: 'Queue Unavailable' },
  job_cancelled: { status: 409, slug: 'job-cancelled', title: 'Job Cancelled' },
  source_changed: { status: 409, slug: 'source-changed', title: 'Source Changed' },
  job_not_finished: { status: 409, slug: 'job-not-finished', title: 'Job Not Finished' },
} as const;

/** The one table: code to answer. */
export const PROBLEMS = {
  ...GENERAL,
  ...AUTH,
  ...KEYS,
  ...CRYPTO,
  ...CMS,
  ...STREAM,
  ...KEYSTORE,
  ...STORAGE,
  ...JOBS,
} as const satisfies Record<string, ProblemSpec>;

/** A catalogued problem code. */
export type ProblemCode = keyof typeof PROBLEMS;

/** The areas, for documentation and tests (each code belongs to exactly one). */
export const PROBLEM_AREAS = {
  general: GENERAL,
  auth: AUTH,
  keys: KEYS,
  crypto: CRYPTO,
  cms: CMS,
  stream: STREAM,
  keystore: KEYSTORE,
  storage: STORAGE,
  jobs: JOBS,
} as const;

/** True when `code` is a catalogued problem code (request values never index plain objects). */
export function isProblemCode(code: unknown): code is ProblemCode {
  return typeof code === 'string' && Object.hasOwn(PROBLEMS, code);
}

/**
 * The OAuth 2.0 error codes of the auth endpoints (RFC 6749 section 5.2, RFC 7009, RFC 8693,
 * spec 7.1) with the status each answers unless the endpoint says otherwise. Auth endpoints
 * answer `{error, error_description}`, not problem details.
 */
export const OAUTH_ERRORS = {
  invalid_request: { status: 400 },
  invalid_client: { status: 401 },
  invalid_grant: { status: 400 },
  invalid_target: { status: 400 },
  unsupported_grant_type: { status: 400 },
  too_many_requests: { status: 429 },
  not_found: { status: 404 },
  server_error: { status: 500 },
  temporarily_unavailable: { status: 503 },
} as const satisfies Record<string, { status: number }>;

/** An OAuth error code. */
export type OAuthCode = keyof typeof OAUTH_ERRORS;
