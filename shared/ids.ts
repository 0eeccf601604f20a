/** Identifier formats shared by routes and services. */

/** The text of a UUID (any version), for composing larger patterns. */
export const UUID_SOURCE = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';

const UUID = new RegExp(`^${UUID_SOURCE}$`, 'i');

/** True for a UUID string: checked before it reaches a uuid column, which would otherwise fail with a 500. */
export function isUuid(value: unknown): value is string {
  return typeof value === 'string' && UUID.test(value);
}
