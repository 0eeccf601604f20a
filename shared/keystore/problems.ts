/**
 * The keystore import problems. Codes follow the catalogue convention in shared/errors
 * (snake_case code, kebab-case slug). The table has the shape of PROBLEMS so that it can be
 * merged into the catalogue, which lets errorFromData rebuild these codes with their status
 * after they cross a worker boundary (conventions rule 4).
 */
import { AppError, problemBuilder } from '../errors/index.ts';
import type { ProblemSpec } from '../errors/index.ts';

export const KEYSTORE_PROBLEMS = {
  keystore_password_invalid: { status: 400, slug: 'keystore-password-invalid', title: 'Keystore Password Invalid' },
  keystore_malformed: { status: 400, slug: 'keystore-malformed', title: 'Malformed Keystore' },
  keystore_unsupported_algorithm: { status: 415, slug: 'keystore-unsupported-algorithm', title: 'Unsupported Keystore Algorithm' },
  keystore_empty: { status: 400, slug: 'keystore-empty', title: 'Keystore Holds No Private Key' },
  keystore_key_mismatch: { status: 400, slug: 'keystore-key-mismatch', title: 'Certificate Does Not Match Key' },
  keystore_key_invalid: { status: 400, slug: 'keystore-key-invalid', title: 'Inconsistent Key Pair' },
  keystore_too_large: { status: 413, slug: 'keystore-too-large', title: 'Keystore Too Large' },
} as const satisfies Record<string, ProblemSpec>;

export type KeystoreProblemCode = keyof typeof KEYSTORE_PROBLEMS;

/** Builds the AppError for a keystore problem. */
export const keystoreProblem = problemBuilder(KEYSTORE_PROBLEMS);

/** True when `err` is one of the problems above (so callers can rethrow it untouched). */
export function isKeystoreProblem(err: unknown): err is AppError {
  return err instanceof AppError && Object.hasOwn(KEYSTORE_PROBLEMS, err.code);
}
