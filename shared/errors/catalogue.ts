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
  /** One line for the problem page: what the problem means and what to do about it. */
  readonly help: string;
}

/** Requests the HTTP edge refuses before any area looks at them. */
const GENERAL = {
  bad_request: {
    status: 400,
    slug: 'bad-request',
    title: 'Bad Request',
    help: 'The request is not one this endpoint can read (a missing part, a wrong parameter shape). Fix the request as the detail says; the API reference at /docs shows its form.',
  },
  malformed_json: {
    status: 400,
    slug: 'malformed-json',
    title: 'Malformed JSON',
    help: 'The body is not valid JSON. Send well-formed JSON with Content-Type: application/json.',
  },
  validation_failed: {
    status: 400,
    slug: 'validation-failed',
    title: 'Validation Failed',
    help: 'A member of the request has a missing, wrong-typed or out-of-range value; the detail names it. Correct that value and send again.',
  },
  not_found: {
    status: 404,
    slug: 'not-found',
    title: 'Not Found',
    help: 'Nothing exists at this path, or the resource is not visible to your token. Check the URL, the ids in it and the tenant of your token.',
  },
  method_not_allowed: {
    status: 405,
    slug: 'method-not-allowed',
    title: 'Method Not Allowed',
    help: 'The path exists but not with this HTTP method. Use one of the methods in the Allow header.',
  },
  not_acceptable: {
    status: 406,
    slug: 'not-acceptable',
    title: 'Not Acceptable',
    help: 'The service cannot answer in any media type the Accept header allows. Accept the media type the endpoint documents.',
  },
  conflict: {
    status: 409,
    slug: 'conflict',
    title: 'Conflict',
    help: 'The request conflicts with the current state of the resource (a duplicate name, a concurrent change). Read the resource again and retry with current values.',
  },
  request_timeout: {
    status: 408,
    slug: 'request-timeout',
    title: 'Request Timeout',
    help: 'The request body stopped arriving (no byte for BODY_IDLE_TIMEOUT_MS), or a small body took longer than SMALL_BODY_TIMEOUT_MS; the connection is closed. Send the whole body without pauses; use the streaming endpoints for large data.',
  },
  payload_too_large: {
    status: 413,
    slug: 'payload-too-large',
    title: 'Payload Too Large',
    help: 'The body is larger than this endpoint accepts. Send a smaller body, or use the streaming or upload endpoints for large data.',
  },
  unsupported_media_type: {
    status: 415,
    slug: 'unsupported-media-type',
    title: 'Unsupported Media Type',
    help: 'The Content-Type of the body is not one this endpoint reads. Send the media type the endpoint documents.',
  },
  unprocessable: {
    status: 422,
    slug: 'unprocessable',
    title: 'Unprocessable Entity',
    help: 'The request is well formed but cannot be carried out as asked. Read the detail, change the request, and do not retry it unchanged.',
  },
  rate_limited: {
    status: 429,
    slug: 'rate-limited',
    title: 'Too Many Requests',
    help: 'Too many requests from this identity in a short time. Wait the number of seconds in Retry-After before trying again.',
  },
  internal: {
    status: 500,
    slug: 'internal-error',
    title: 'Internal Server Error',
    help: 'The service failed in a way it did not expect. Retry later; if it persists, give the operator the request id so they can find the log line.',
  },
  pool_busy: {
    status: 503,
    slug: 'service-busy',
    title: 'Service Busy',
    help: 'The cryptography worker pool is full. Retry after the Retry-After delay, or spread the load; operators can raise POOL_THREADS or POOL_MAX_QUEUE.',
  },
  too_many_connections: {
    status: 503,
    slug: 'too-many-connections',
    title: 'Too Many Connections',
    help: 'This client address, or all clients together, hold as many connections as the service accepts (MAX_CONNECTIONS_PER_ADDRESS, MAX_CONNECTIONS). Reuse kept-alive connections, close idle ones, and retry after the Retry-After delay.',
  },
  unavailable: {
    status: 503,
    slug: 'service-unavailable',
    title: 'Service Unavailable',
    help: 'A dependency the request needs is down. Retry later; operators should check /readyz.',
  },
  database_unavailable: {
    status: 503,
    slug: 'database-unavailable',
    title: 'Database Unavailable',
    help: 'The database cannot be reached. Retry later; operators should check the database and /readyz.',
  },
} as const;

/** Bearer authentication and the account flows of the non-OAuth endpoints (401/403 carry no `error` member). */
const AUTH = {
  unauthorized: {
    status: 401,
    slug: 'unauthorized',
    title: 'Unauthorized',
    help: 'No valid bearer token came with the request: it is missing, expired, revoked or for another audience. Get a new token from /api/v3/auth/token.',
  },
  forbidden: {
    status: 403,
    slug: 'forbidden',
    title: 'Forbidden',
    help: 'The token is valid but lacks the permission or the tenant this request needs. Ask an administrator for a role that grants it.',
  },
  invalid_reset_token: {
    status: 400,
    slug: 'invalid-reset-token',
    title: 'Invalid Reset Token',
    help: 'The password-reset token is unknown, already used or older than 30 minutes. Request a new reset mail.',
  },
} as const;

/** Keys, their states and versions, policies and key exchanges. */
const KEYS = {
  key_not_found: {
    status: 404,
    slug: 'key-not-found',
    title: 'Key Not Found',
    help: 'No key with this id exists in your tenant, or it is not visible to your token. Check the key id and the tenant.',
  },
  key_suspended: {
    status: 409,
    slug: 'key-suspended',
    title: 'Key Suspended',
    help: 'The key is suspended and refuses operations until it is resumed. Ask a key administrator to resume it, or use another key.',
  },
  key_pending_deletion: {
    status: 409,
    slug: 'key-pending-deletion',
    title: 'Key Pending Deletion',
    help: 'The key is scheduled for deletion and refuses operations; at its deletion date it is revoked and archived for good. Resume the key (or CancelKeyDeletion on the AWS KMS API) to cancel the deletion, or use another key.',
  },
  key_revoked: {
    status: 409,
    slug: 'key-revoked',
    title: 'Key Revoked',
    help: 'The key is revoked for good and refuses new operations. Use another key; data protected by it may still be opened where policy allows.',
  },
  invalid_transition: {
    status: 409,
    slug: 'invalid-transition',
    title: 'Invalid State Transition',
    help: 'The key cannot move from its current state to the one asked (for example resume a revoked key). Read the key state and pick an allowed transition.',
  },
  key_version_retired: {
    status: 409,
    slug: 'key-version-retired',
    title: 'Key Version Retired',
    help: 'The key version named is retired and no longer used for this operation. Use the current version, or rewrap the data to it.',
  },
  key_usage_mismatch: {
    status: 422,
    slug: 'key-usage-mismatch',
    title: 'Key Usage Mismatch',
    help: 'The key is not made for this operation (a signing key asked to encrypt, or the reverse). Use a key whose usage matches the operation.',
  },
  policy_violation: {
    status: 422,
    slug: 'policy-violation',
    title: 'Policy Violation',
    help: "The request breaks the tenant's policy (an algorithm, size or lifetime it forbids). Change the request to fit the effective policy.",
  },
  exchange_not_pending: {
    status: 409,
    slug: 'exchange-not-pending',
    title: 'Exchange Not Pending',
    help: 'The key exchange was already accepted, rejected or withdrawn. Read its current state; a new offer is needed to try again.',
  },
  exchange_expired: {
    status: 410,
    slug: 'exchange-expired',
    title: 'Exchange Expired',
    help: 'The key exchange offer expired before it was accepted. Ask the offering tenant for a new offer.',
  },
} as const;

/**
 * Cryptography. Every failure to open a ciphertext (wrong key, bad tag or padding, wrong context)
 * is this one opaque code, the cause only in the log (RFC 7516 section 11.5);
 * the CMS engine's former 422 cms-decryption-failed is the same failure, so it answers the same.
 */
const CRYPTO = {
  decryption_failed: {
    status: 400,
    slug: 'decryption-failed',
    title: 'Decryption Failed',
    help: 'The ciphertext could not be opened: wrong key, altered data, or a different context than at encryption. The cause is not disclosed; check the key and inputs.',
  },
} as const;

/** The PKCS#7/CMS engine. */
const CMS = {
  cms_malformed: {
    status: 400,
    slug: 'cms-malformed',
    title: 'Malformed CMS',
    help: 'The input is not well-formed PKCS#7/CMS (bad DER or BER structure). Check that the whole file was sent, in binary DER or PEM.',
  },
  cms_truncated: {
    status: 400,
    slug: 'cms-truncated',
    title: 'Truncated CMS',
    help: 'The CMS input ended before its structure was complete. Send the whole file again.',
  },
  cms_unsupported: {
    status: 415,
    slug: 'cms-unsupported',
    title: 'Unsupported CMS Content',
    help: 'The CMS content type or algorithm is not one the converter handles. See the supported list in the API reference.',
  },
  cms_too_large: {
    status: 413,
    slug: 'cms-element-too-large',
    title: 'CMS Element Too Large',
    help: 'An element of the CMS input is larger than the converter allows. Split the content or raise the limit where the operator allows it.',
  },
  cms_key_not_imported: {
    status: 404,
    slug: 'cms-key-not-imported',
    title: 'CMS Key Not Imported',
    help: 'The CMS input is for a recipient or signer key that is not imported into your tenant. Import that key (PKCS#12 or PEM) first.',
  },
  cms_key_unusable: {
    status: 422,
    slug: 'cms-key-unusable',
    title: 'CMS Key Unusable',
    help: 'The imported key that matches the CMS input cannot be used for it (wrong state or usage). Check the key state and usage.',
  },
  jose_mixed_recipients: {
    status: 422,
    slug: 'jose-mixed-recipients',
    title: 'Mixed Classical And Post-Quantum Recipients',
    help: 'A JWE to post-quantum recipients must not also go to a classical one: breaking that key later reads the content. Name only post-quantum targets, or set allowMixedRecipients: true, recorded in the output.',
  },
  cms_signature_invalid: {
    status: 422,
    slug: 'cms-signature-invalid',
    title: 'CMS Signature Invalid',
    help: 'The CMS signature does not verify against its content and signer certificate. The data or signature was altered, or the signer differs.',
  },
  cms_content_indefinite: {
    status: 415,
    slug: 'cms-content-indefinite',
    title: 'PKCS#7 Content Without a Length',
    help: 'A PKCS#7 v1.5 content of a type other than OCTET STRING is signed over its DER value (RFC 2315 section 9.3); with an indefinite (BER) length it would have to be re-encoded whole first. Re-encode the file as DER.',
  },
  cms_nesting_too_deep: {
    status: 415,
    slug: 'cms-nesting-too-deep',
    title: 'CMS Content Nested Too Deeply',
    help: 'The CMS content types nest deeper than the converter takes (4 levels) and nothing was converted. Open the outer layers with the tool that made them, then convert the inner ones.',
  },
  cms_signer_untrusted: {
    status: 422,
    slug: 'cms-signer-untrusted',
    title: 'CMS Signer Untrusted',
    help: "The signature verifies, but verify: chain found no path to the tenant's trust anchors, or a certificate on it is unfit: a signer not for signing mail (keyUsage, extendedKeyUsage), or a CA past its pathLenConstraint or nameConstraints.",
  },
  cms_signer_certificate_mismatch: {
    status: 422,
    slug: 'cms-signer-certificate-mismatch',
    title: 'CMS Signer Certificate Mismatch',
    help: "None of the certificates the SignedData carries matches its signer identifier, and the tenant holds no key or verify-only certificate for it. Import the signer's certificate.",
  },
  cms_eddsa_too_large: {
    status: 422,
    slug: 'cms-eddsa-content-too-large',
    title: 'Content Too Large For EdDSA',
    help: 'EdDSA signs the whole content at once, and this content is larger than the service holds in memory for it. Use a smaller content or another algorithm.',
  },
  cms_bad_metadata: {
    status: 400,
    slug: 'cms-bad-metadata',
    title: 'Bad Conversion Metadata',
    help: 'The conversion options sent with the CMS input are not valid. Correct them as the detail says.',
  },
  cms_base64_invalid: {
    status: 400,
    slug: 'cms-base64-invalid',
    title: 'Invalid Base64 Around CMS',
    help: 'The base64 text holding the CMS object (PEM, bare base64 or a base64 MIME body) has a character outside the alphabet or padding in the middle. Send the file as it was written, without edits.',
  },
  cms_base64_truncated: {
    status: 400,
    slug: 'cms-base64-truncated',
    title: 'Truncated Base64 Around CMS',
    help: 'The base64 text holding the CMS object ends inside a group of four characters: the file was cut. Send the whole file again.',
  },
  cms_pem_unterminated: {
    status: 400,
    slug: 'cms-pem-unterminated',
    title: 'PEM Without End Line',
    help: 'The PEM armour opened by -----BEGIN PKCS7----- (or CMS, SIGNED MESSAGE, ENCRYPTED MESSAGE...) has no matching -----END line: the file was cut. Send the whole file again.',
  },
  cms_pem_end_mismatch: {
    status: 400,
    slug: 'cms-pem-end-mismatch',
    title: 'PEM End Line Of Another Label',
    help: 'The armour ends with an -----END line whose label is not the one its -----BEGIN line opened (RFC 7468 section 2): two files were joined or the armour was edited. Send the file as its producer wrote it.',
  },
  cms_mime_no_body: {
    status: 400,
    slug: 'cms-mime-no-body',
    title: 'MIME Entity Without Body',
    help: 'The S/MIME entity ends after its header fields (no blank line, or nothing after it). Send the whole message or attachment.',
  },
  cms_mime_header_too_large: {
    status: 413,
    slug: 'cms-mime-header-too-large',
    title: 'MIME Header Block Too Large',
    help: 'A header block of the MIME message is larger than the converter reads (64 KiB). Real mail headers are far smaller: check that the file is a mail message.',
  },
  cms_mime_too_deep: {
    status: 400,
    slug: 'cms-mime-too-deep',
    title: 'MIME Nested Too Deeply',
    help: 'The CMS object sits deeper in nested MIME parts than the converter follows (4 levels). Extract the S/MIME part from the message and send it alone.',
  },
  cms_multipart_signed_malformed: {
    status: 400,
    slug: 'cms-multipart-signed-malformed',
    title: 'Malformed Clear-Signed Message',
    help: 'The multipart/signed message (RFC 1847) lacks its boundary, its signed part or its signature part. Send the whole message as it was received.',
  },
  cms_mime_no_cms: {
    status: 422,
    slug: 'cms-mime-no-cms',
    title: 'No CMS In The Message',
    help: 'The mail message holds no S/MIME part (application/pkcs7-mime, or a multipart/signed with a pkcs7-signature). Send a message that is encrypted or signed with S/MIME, or the .p7m/.p7s itself.',
  },
} as const;

/** The JOSE stream endpoints (re-encrypt, re-sign). */
const STREAM = {
  jose_malformed: {
    status: 400,
    slug: 'jose-malformed',
    title: 'Malformed JOSE Input',
    help: 'The JOSE input (JWE or JWS) is not well formed. Check the serialization and that the whole input was sent.',
  },
  jose_unsupported: {
    status: 415,
    slug: 'jose-unsupported',
    title: 'Unsupported JOSE Input',
    help: 'The JOSE input uses an algorithm or serialization the stream endpoints do not handle. See the API reference for the supported ones.',
  },
  signature_invalid: {
    status: 422,
    slug: 'signature-invalid',
    title: 'Signature Invalid',
    help: 'The signature does not verify with the key. The data or signature was altered, or another key signed it.',
  },
  jose_too_large: {
    status: 422,
    slug: 'jose-content-too-large',
    title: 'Content Too Large For EdDSA',
    help: 'EdDSA signs the whole content at once, and this content is larger than the service holds in memory for it. Use a smaller content or another algorithm.',
  },
} as const;

/** Keystore imports (PKCS#12, PEM). */
const KEYSTORE = {
  keystore_password_invalid: {
    status: 400,
    slug: 'keystore-password-invalid',
    title: 'Keystore Password Invalid',
    help: 'The keystore password is wrong. Send the password the keystore was made with.',
  },
  keystore_malformed: {
    status: 400,
    slug: 'keystore-malformed',
    title: 'Malformed Keystore',
    help: 'The keystore is not a well-formed PKCS#12 or PEM file. Check the file and its format.',
  },
  keystore_unsupported_algorithm: {
    status: 415,
    slug: 'keystore-unsupported-algorithm',
    title: 'Unsupported Keystore Algorithm',
    help: 'The keystore uses a key or protection algorithm the importer does not handle. Export it again with a supported algorithm.',
  },
  keystore_empty: {
    status: 400,
    slug: 'keystore-empty',
    title: 'Keystore Holds No Private Key',
    help: 'The keystore holds no private key. Export the keystore with its private key included.',
  },
  keystore_key_mismatch: {
    status: 400,
    slug: 'keystore-key-mismatch',
    title: 'Certificate Does Not Match Key',
    help: 'The certificate in the keystore is not for its private key. Export the matching pair.',
  },
  keystore_key_invalid: {
    status: 400,
    slug: 'keystore-key-invalid',
    title: 'Inconsistent Key Pair',
    help: 'The private key in the keystore is internally inconsistent, or an RSA key whose public exponent is not an odd number from 65537 to below 2^256. Export it again from its source, or make a new key.',
  },
  keystore_too_large: {
    status: 413,
    slug: 'keystore-too-large',
    title: 'Keystore Too Large',
    help: 'The keystore is larger than the importer accepts. Send a keystore with fewer entries.',
  },
} as const;

/** Object storage; `details.transient` says whether a job retry can help. */
const STORAGE = {
  storage_unavailable: {
    status: 503,
    slug: 'storage-unavailable',
    title: 'Storage Unavailable',
    help: 'Object storage cannot be reached. Retry later; operators should check S3_ENDPOINT and the storage service.',
  },
} as const;

/** Queued jobs. */
const JOBS = {
  queue_unavailable: {
    status: 503,
    slug: 'queue-unavailable',
    title: 'Queue Unavailable',
    help: 'The job queue is not configured or Redis cannot be reached. Retry later; operators should check REDIS_URL.',
  },
  job_cancelled: {
    status: 409,
    slug: 'job-cancelled',
    title: 'Job Cancelled',
    help: 'The job was cancelled, so it has no result. Start a new job if the work is still needed.',
  },
  source_changed: {
    status: 409,
    slug: 'source-changed',
    title: 'Source Changed',
    help: 'The uploaded source object changed after the job was created. Create a new job for the current object.',
  },
  job_not_finished: {
    status: 409,
    slug: 'job-not-finished',
    title: 'Job Not Finished',
    help: 'The job is still queued or running, so its result is not ready. Poll the job until it has finished.',
  },
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
 * The OAuth 2.0 error codes of the auth endpoints (RFC 6749 section 5.2, RFC 7009, RFC 8693)
 * with the status each answers unless the endpoint says otherwise. Auth endpoints
 * answer `{error, error_description}`, not problem details.
 */
export const OAUTH_ERRORS = {
  invalid_request: { status: 400 },
  invalid_client: { status: 401 },
  invalid_grant: { status: 400 },
  invalid_target: { status: 400 },
  unauthorized_client: { status: 400 },
  unsupported_grant_type: { status: 400 },
  too_many_requests: { status: 429 },
  not_found: { status: 404 },
  server_error: { status: 500 },
  temporarily_unavailable: { status: 503 },
} as const satisfies Record<string, { status: number }>;

/** An OAuth error code. */
export type OAuthCode = keyof typeof OAUTH_ERRORS;
