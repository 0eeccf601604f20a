/**
 * The problems of the PKCS#7/CMS engine. They extend the catalogue of shared/errors with codes
 * only this engine raises; every one is an AppError, so the error middleware renders it as is.
 */
import { AppError, problemBuilder } from '../errors/index.ts';
import type { ProblemSpec } from '../errors/index.ts';

/** One row per stable code of the engine. */
export const CMS_PROBLEMS = {
  cms_malformed: { status: 400, slug: 'cms-malformed', title: 'Malformed CMS' },
  cms_truncated: { status: 400, slug: 'cms-truncated', title: 'Truncated CMS' },
  cms_unsupported: { status: 415, slug: 'cms-unsupported', title: 'Unsupported CMS Content' },
  cms_too_large: { status: 413, slug: 'cms-element-too-large', title: 'CMS Element Too Large' },
  cms_key_not_imported: { status: 404, slug: 'cms-key-not-imported', title: 'CMS Key Not Imported' },
  cms_key_unusable: { status: 422, slug: 'cms-key-unusable', title: 'CMS Key Unusable' },
  cms_signature_invalid: { status: 422, slug: 'cms-signature-invalid', title: 'CMS Signature Invalid' },
  cms_decryption_failed: { status: 422, slug: 'cms-decryption-failed', title: 'CMS Decryption Failed' },
  cms_eddsa_too_large: { status: 422, slug: 'cms-eddsa-content-too-large', title: 'Content Too Large For EdDSA' },
  cms_bad_metadata: { status: 400, slug: 'cms-bad-metadata', title: 'Bad Conversion Metadata' },
} as const satisfies Record<string, ProblemSpec>;

export type CmsProblemCode = keyof typeof CMS_PROBLEMS;

/** Builds the AppError for one of the engine's codes. */
export const cmsProblem = problemBuilder(CMS_PROBLEMS);

/**
 * The one error for every decryption failure (padding, tag, wrong key): callers learn nothing
 * about which step failed (conventions rule 3, RFC 7516 section 11.5); the cause is kept for the log.
 */
export function decryptionFailed(cause?: unknown): AppError {
  return cmsProblem('cms_decryption_failed', 'the content could not be decrypted', { cause });
}

/** True when `err` is an AppError (from this engine or elsewhere) rather than an unexpected fault. */
export function isAppError(err: unknown): err is AppError {
  return err instanceof AppError;
}
