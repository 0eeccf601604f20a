/**
 * Which errors are the keystore import's own: the rows of the catalogue's keystore area
 * (shared/errors/catalogue.ts), so that callers can rethrow them untouched.
 */
import { AppError, PROBLEM_AREAS } from '../errors/index.ts';

/** True when `err` is one of the keystore problems. */
export function isKeystoreProblem(err: unknown): err is AppError {
  return err instanceof AppError && Object.hasOwn(PROBLEM_AREAS.keystore, err.code);
}
