/**
 * Unknown JSON members are refused, never ignored (contract 8): a caller who sends `aad` or
 * `encryptionContext` must not believe it is bound when it is not. One function for every JSON
 * endpoint, services and routes alike.
 */
import { problem } from '../errors/index.ts';

/** Throws 400 validation-failed naming the first member of `input` that is not in `known`. */
export function onlyKnown(input: object, known: ReadonlySet<string>, where = 'member'): void {
  const unknown = Object.keys(input).filter((k) => !known.has(k));
  if (unknown.length > 0) {
    throw problem(
      'validation_failed',
      `unknown ${where} ${unknown.map((k) => k.slice(0, 40)).join(', ')}; known: ${[...known].join(', ')}`,
      { details: { field: unknown[0].slice(0, 40) } },
    );
  }
}
