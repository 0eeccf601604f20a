/**
 * Maps backend failures onto the error tree: outages become the transient storage_unavailable
 * problem (job workers retry it), a missing object becomes not_found. Details never carry the
 * key, so a tenant-scoped store cannot leak its prefix.
 */
import { AppError, problem } from '../errors/index.ts';

/** The storage outage problem; `transient` tells job workers whether retrying can help. */
export function storageUnavailable(
  message: string,
  opts: { cause?: unknown; transient?: boolean; details?: Record<string, unknown> } = {},
): AppError {
  return problem('storage_unavailable', message, {
    details: { ...opts.details, transient: opts.transient ?? true },
    cause: opts.cause,
  });
}

/** True for the storage_unavailable problem marked transient. */
export function isTransientStorageError(err: unknown): boolean {
  return (
    err instanceof AppError && err.code === 'storage_unavailable' && err.details?.transient === true
  );
}

const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ESOCKETTIMEDOUT',
  'ERR_STREAM_PREMATURE_CLOSE',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
]);
/** S3 error codes that mean "try again later". */
const S3_TRANSIENT = new Set([
  'InternalError',
  'ServiceUnavailable',
  'SlowDown',
  'RequestTimeout',
  'RequestTimeTooSkewed',
  'XMinioServerNotInitialized',
]);
const S3_MISSING = new Set(['NoSuchKey', 'NotFound']);

function codeOf(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** True when the error (or one it aggregates) is a network-level failure. */
export function isNetworkError(err: unknown): boolean {
  const code = codeOf(err);
  if (code && NETWORK_CODES.has(code)) return true;
  const inner = (err as { errors?: unknown } | null)?.errors;
  return Array.isArray(inner) && inner.some(isNetworkError);
}

/** minio reports retryable 5xx statuses as plain errors with this text. */
function isRetryableStatus(err: unknown): boolean {
  return err instanceof Error && /Retryable HTTP status: 5\d\d/.test(err.message);
}

/** True when the S3 error says the object (or its key) is missing. */
export function isS3Missing(err: unknown): boolean {
  const code = codeOf(err);
  return code !== undefined && S3_MISSING.has(code);
}

/** Maps an error raised by the S3 client to the error tree. */
export function mapS3Error(err: unknown, op: string, objectOp = false): unknown {
  if (err instanceof AppError) return err;
  if ((err as Error | null)?.name === 'AbortError') return err;
  const code = codeOf(err);
  const details = { op, ...(code ? { backendCode: code } : {}) };
  if (objectOp && isS3Missing(err)) return problem('not_found', 'object not found');
  if (isNetworkError(err) || isRetryableStatus(err) || (code && S3_TRANSIENT.has(code))) {
    return storageUnavailable(`object storage unreachable during ${op}`, { cause: err, details });
  }
  if (code === 'NoSuchBucket') {
    return storageUnavailable('object storage bucket is missing', {
      cause: err,
      details,
      transient: false,
    });
  }
  if (
    code === 'AccessDenied' ||
    code === 'InvalidAccessKeyId' ||
    code === 'SignatureDoesNotMatch'
  ) {
    return storageUnavailable('object storage refused the credentials', {
      cause: err,
      details,
      transient: false,
    });
  }
  return err;
}

const FS_TRANSIENT = new Set([
  'EIO',
  'ENOSPC',
  'EDQUOT',
  'EMFILE',
  'ENFILE',
  'EAGAIN',
  'EBUSY',
  'ETIMEDOUT',
  'ESTALE',
]);

/** Maps a filesystem error to the error tree (missing objects are handled by the callers). */
export function mapFsError(err: unknown, op: string): unknown {
  if (err instanceof AppError) return err;
  const code = codeOf(err);
  const details = { op, ...(code ? { backendCode: code } : {}) };
  if (code === 'ENAMETOOLONG')
    return problem('validation_failed', 'object key is too long for the filesystem', {
      details: { field: 'key', reason: 'name too long' },
    });
  if (code && FS_TRANSIENT.has(code))
    return storageUnavailable(`object storage failed during ${op}`, { cause: err, details });
  if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS') {
    return storageUnavailable('object storage directory is not writable', {
      cause: err,
      details,
      transient: false,
    });
  }
  return err;
}
