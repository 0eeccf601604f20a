/**
 * The refusal text of a schema member (TypeBox options): when a request member fails its schema
 * in any way (missing, wrong type, out of bounds, a bad entry inside it), the 400 names it with
 * this text rather than the failing keyword's, e.g. `bytes must be an integer from 1 to 1024`.
 * Kept under a symbol, so the document generated from the same schema does not show it.
 */
export const REFUSAL: unique symbol = Symbol('refusal');

/** Options giving a member its refusal text: `Type.Integer({ minimum: 1, ...refusedAs('must be ...') })`. */
export const refusedAs = (text: string) => ({ [REFUSAL]: text });

/** The refusal text a schema carries, if any. */
export const refusalText = (schema: unknown): string | undefined =>
  schema && typeof schema === 'object'
    ? ((schema as { [REFUSAL]?: string })[REFUSAL] ?? undefined)
    : undefined;
