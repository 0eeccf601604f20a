/**
 * What an audit event may hold. The hash is computed over the event before it is stored, so the
 * event must already be exactly what Postgres will hand back: well-formed Unicode (a lone UTF-16
 * surrogate is refused by jsonb and turned into U+FFFD by the text encoder, so the stored row
 * would no longer match its hash), no NUL (refused by text and jsonb), and details that are
 * plain JSON (what survives JSON.stringify, which is what jsonb receives).
 */

const MAX_STRING = 1024;

// Control characters have no place in an audit line (a hostile client_id or kid must not be able
// to forge line breaks in an export), and NUL cannot be stored at all; replacing them is
// deterministic, so the same input always hashes the same.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/g;

/** A string as it is hashed and stored: capped, well-formed, without control characters. */
export function auditText(s: string): string {
  // Cap first: a cut between the halves of a surrogate pair leaves a lone surrogate, which the
  // toWellFormed() after it turns into U+FFFD.
  return s.slice(0, MAX_STRING).toWellFormed().replace(CONTROL, '\uFFFD');
}

function cleanJson(v: unknown): unknown {
  if (typeof v === 'string') return auditText(v);
  if (Array.isArray(v)) return v.map(cleanJson);
  if (v !== null && typeof v === 'object')
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [auditText(k), cleanJson(x)]));
  return v;
}

/**
 * Details as plain JSON with every key and string made auditText: a JSON round trip first (Dates
 * become their ISO string, undefined members vanish, NaN becomes null, a bigint its decimal
 * string), so the canonical hash input is what the jsonb column will give back.
 */
export function auditDetails(
  details: Record<string, unknown> | undefined,
): Record<string, unknown> {
  if (details === undefined) return {};
  let plain: unknown;
  try {
    plain = JSON.parse(
      JSON.stringify(details, (_k, x: unknown) => (typeof x === 'bigint' ? x.toString() : x)),
    );
  } catch {
    // A circular structure: the event is still recorded, and says why its details are missing.
    return { unserialisable: true };
  }
  return plain !== null && typeof plain === 'object' && !Array.isArray(plain)
    ? (cleanJson(plain) as Record<string, unknown>)
    : {};
}
