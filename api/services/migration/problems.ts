/**
 * Problems of the stream re-encrypt and re-sign endpoints (contract 5) beyond the shared
 * catalogue. Each is an AppError with its own slug, so the error middleware renders it as is.
 */
import { AppError, problemBuilder } from '../../../shared/errors/index.ts';
import type { ProblemSpec } from '../../../shared/errors/index.ts';

export const STREAM_PROBLEMS = {
  jose_malformed: { status: 400, slug: 'jose-malformed', title: 'Malformed JOSE Input' },
  jose_unsupported: { status: 415, slug: 'jose-unsupported', title: 'Unsupported JOSE Input' },
  signature_invalid: { status: 422, slug: 'signature-invalid', title: 'Signature Invalid' },
  jose_too_large: { status: 422, slug: 'jose-content-too-large', title: 'Content Too Large For EdDSA' },
} as const satisfies Record<string, ProblemSpec>;

export type StreamProblemCode = keyof typeof STREAM_PROBLEMS;

/** Builds the AppError for one of these codes. */
export const streamProblem = problemBuilder(STREAM_PROBLEMS);

/**
 * The one answer for every failure to open a JWE (wrong key, bad tag, bad padding): the
 * catalogue's decryption-failed, the cause only in the log (conventions rule 3, RFC 7516 section 11.5).
 */
export function decryptionFailed(cause?: unknown): AppError {
  return new AppError('decryption_failed', 'the content could not be decrypted', { cause });
}
