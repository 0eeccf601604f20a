/**
 * Identifier formats shared by routes and services, and the one canonical form of request
 * input. A UUID is case-insensitive text (RFC 9562 section 4) but every cache key, seal binding,
 * audit hash and rate-limit key compares bytes, so UUIDs are lower-cased where a request enters;
 * text that no column or hash can hold (U+0000, lone UTF-16 surrogates) is refused there too.
 */

/** The text of a UUID (any version), for composing larger patterns. */
export const UUID_SOURCE = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';

/**
 * An identifier a client chooses and we store or echo as it is (a key id, a request id): 1 to 128
 * of A-Z a-z 0-9 . _ : -, so it is safe in a log line, a header, a URL segment and a cache key.
 */
const SAFE_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** True for a SAFE_ID. */
export function isSafeId(value: unknown): value is string {
  return typeof value === 'string' && SAFE_ID.test(value);
}

/** A key id: a SAFE_ID (never `#`, which names a version: `<kid>#<version>`). */
export const KID = SAFE_ID;

const UUID = new RegExp(`^${UUID_SOURCE}$`, 'i');

/** True for a UUID string: checked before it reaches a uuid column, which would otherwise fail with a 500. */
export function isUuid(value: unknown): value is string {
  return typeof value === 'string' && UUID.test(value);
}

/** The canonical text of an identifier: a UUID in lower case, anything else as it is. */
export function canonicalId(value: string): string {
  return UUID.test(value) ? value.toLowerCase() : value;
}

/** Why a string cannot enter, or null: Postgres text cannot hold U+0000 and UTF-8 cannot encode a lone surrogate. */
export function unfitText(value: string): string | null {
  if (value.includes('\u0000')) return 'contains a NUL character (U+0000)';
  if (!value.isWellFormed()) return 'contains a lone UTF-16 surrogate';
  return null;
}

/** A request value refused at the entry; `field` names where it was ("body.name", "query.cursor", "path"). */
export class UnfitInput extends Error {
  readonly field: string;
  constructor(field: string, reason: string) {
    super(`${field} ${reason}`);
    this.field = field;
  }
}

/**
 * Fields whose values are secrets or payload, never identifiers: a password that happens to look
 * like a UUID must reach the hash as typed, and an encryption context binds exactly the bytes the
 * caller gave. Everything else UUID-shaped is lower-cased.
 */
const OPAQUE_FIELD =
  /password|secret|plaintext|ciphertext|payload|^data$|^aad$|signature|^token$|^context$|^targetContext$/i;

/** Deepest nesting walked; JSON.parse accepts deeper input, which no endpoint needs. */
const MAX_DEPTH = 64;

/**
 * The canonical form of parsed request input (a JSON value, a form or query object, or a string):
 * UUID-shaped strings lower-cased, in place, except under opaque fields; throws UnfitInput for a
 * key or string holding NUL or a lone surrogate, or for nesting deeper than MAX_DEPTH. Iterative,
 * so a hostile nesting depth cannot overflow the stack.
 */
export function canonicalInput<T>(value: T, where: string): T {
  if (typeof value === 'string') return checkedString(value, where, false) as T;
  const stack: Array<{ node: object; path: string; depth: number; opaque: boolean }> = [];
  if (value !== null && typeof value === 'object')
    stack.push({ node: value, path: where, depth: 1, opaque: false });
  while (stack.length > 0) {
    const { node, path, depth, opaque } = stack.pop()!;
    if (depth > MAX_DEPTH) throw new UnfitInput(path, `nests deeper than ${MAX_DEPTH} levels`);
    const keys = Array.isArray(node) ? null : Object.keys(node);
    const count = keys ? keys.length : (node as unknown[]).length;
    for (let i = 0; i < count; i += 1) {
      const key = keys ? keys[i] : String(i);
      if (keys && unfitText(key)) throw new UnfitInput(`${path} member name`, unfitText(key)!);
      const field = keys ? `${path}.${key.slice(0, 64)}` : `${path}[${i}]`;
      const fieldOpaque = opaque || (keys !== null && OPAQUE_FIELD.test(key));
      const v = (node as Record<string, unknown>)[key];
      if (typeof v === 'string') {
        const canonical = checkedString(v, field, fieldOpaque);
        // defineProperty, not assignment: an own "__proto__" member must stay a member.
        if (canonical !== v)
          Object.defineProperty(node, key, {
            value: canonical,
            writable: true,
            enumerable: true,
            configurable: true,
          });
      } else if (v !== null && typeof v === 'object') {
        stack.push({ node: v, path: field, depth: depth + 1, opaque: fieldOpaque });
      }
    }
  }
  return value;
}

function checkedString(value: string, field: string, opaque: boolean): string {
  const reason = unfitText(value);
  if (reason) throw new UnfitInput(field, reason);
  return opaque ? value : canonicalId(value);
}

/**
 * The canonical form of a URL's path: each segment that decodes to a UUID in lower case, so
 * routing, params and the audit trail see one spelling. Throws UnfitInput for a segment that
 * decodes to NUL; a malformed escape is left for the router to refuse (400).
 */
export function canonicalPath(path: string): string {
  if (!/[A-F]|%/.test(path)) return path;
  return path
    .split('/')
    .map((segment) => {
      let decoded: string;
      try {
        decoded = decodeURIComponent(segment);
      } catch {
        return segment;
      }
      const reason = unfitText(decoded);
      if (reason) throw new UnfitInput('path', reason);
      return UUID.test(decoded) ? decoded.toLowerCase() : segment;
    })
    .join('/');
}
