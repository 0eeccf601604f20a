/**
 * The AWS KMS API's errors: `{"__type": "<ExceptionName>", "message": "..."}`
 * with the status AWS documents, and the one table from Keyward's problem codes to them, so a
 * failure of the shared services answers what an AWS client expects.
 */
import { AppError, type ProblemCode } from '../../../shared/errors/index.ts';

/** An AWS KMS exception: its name travels as `__type`. */
export class AwsError extends Error {
  readonly type: string;
  readonly status: number;
  /** Seconds for Retry-After, on a 429. */
  readonly retryAfter?: number;
  constructor(type: string, message: string, status = 400, retryAfter?: number) {
    super(message);
    this.type = type;
    this.status = status;
    if (retryAfter !== undefined) this.retryAfter = retryAfter;
  }
}

/** Keyward problem code → AWS exception (every one 400 in AWS KMS, but for the 5xx ones). */
const BY_CODE = new Map<ProblemCode, string>([
  ['bad_request', 'ValidationException'],
  ['malformed_json', 'SerializationException'],
  ['validation_failed', 'ValidationException'],
  ['payload_too_large', 'ValidationException'],
  ['not_found', 'NotFoundException'],
  ['key_not_found', 'NotFoundException'],
  ['key_suspended', 'DisabledException'],
  ['key_pending_deletion', 'KMSInvalidStateException'],
  ['key_revoked', 'KMSInvalidStateException'],
  ['invalid_transition', 'KMSInvalidStateException'],
  ['key_version_retired', 'InvalidCiphertextException'],
  ['key_usage_mismatch', 'InvalidKeyUsageException'],
  ['decryption_failed', 'InvalidCiphertextException'],
  ['signature_invalid', 'KMSInvalidSignatureException'],
  ['forbidden', 'AccessDeniedException'],
  ['unauthorized', 'UnrecognizedClientException'],
  ['policy_violation', 'UnsupportedOperationException'],
  ['conflict', 'AlreadyExistsException'],
  ['rate_limited', 'LimitExceededException'],
  ['pool_busy', 'LimitExceededException'],
]);

/** The AWS exception of anything thrown by a service; 500 KMSInternalException for the unexpected. */
export function toAwsError(err: unknown): AwsError {
  if (err instanceof AwsError) return err;
  if (err instanceof AppError) {
    const type = BY_CODE.get(err.code as ProblemCode);
    if (type) return new AwsError(type, err.message);
    if (err.status >= 500) return new AwsError('KMSInternalException', 'internal error', 500);
    return new AwsError('ValidationException', err.message);
  }
  return new AwsError('KMSInternalException', 'internal error', 500);
}

/** The one answer of every failed decryption (no oracle). */
export const invalidCiphertext = (): AwsError =>
  new AwsError(
    'InvalidCiphertextException',
    'The ciphertext is invalid or was not made for this request.',
  );

/** The exception of a KeyId the tenant has no key for: the same words whatever the reason. */
export const keyNotFound = (keyId: string): AwsError =>
  new AwsError('NotFoundException', `Key '${keyId.slice(0, 256)}' does not exist`);
