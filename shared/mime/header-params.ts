/**
 * The header values a multipart part carries, parsed: Content-Type (RFC 9110 8.3.1) and
 * Content-Disposition (RFC 6266, RFC 7578 4.2) with their parameters, quoted strings
 * (RFC 9110 5.6.4) and RFC 8187 extended values (`filename*=UTF-8''%e2%82%ac.txt`). A malformed
 * value parses to undefined: the caller treats it as absent, never guesses.
 */

/** A media type with its parameters (names lower-cased; the first of a repeated name wins). */
export interface MediaType {
  type: string;
  subtype: string;
  params: Record<string, string>;
}

/** A disposition with its parameters; an extended parameter keeps its `*` (`filename*`), decoded. */
export interface Disposition {
  type: string;
  params: Record<string, string>;
}

const TOKEN = "[!#$%&'*+\\-.^_`|~0-9A-Za-z]+";
const QUOTED =
  '"((?:[\\t\\x20\\x21\\x23-\\x5b\\x5d-\\x7e\\x80-\\xff]|\\\\[\\t\\x20-\\x7e\\x80-\\xff])*)"';
/** One `; name=value` parameter, from a position (sticky). */
const PARAM = new RegExp(`[ \\t]*;[ \\t]*(${TOKEN})=(?:${QUOTED}|(${TOKEN}))`, 'y');
const TRAILING_SPACE = /[ \t]*$/y;
const LEADING = new RegExp(`^(${TOKEN})`);
const MEDIA_TYPE = new RegExp(`^(${TOKEN})/(${TOKEN})`);
/** An RFC 8187 ext-value: charset ' [language] ' pct-encoded value. */
const EXT_VALUE =
  /^([!#$&+\-^_`{}~0-9A-Za-z]+)'[^']*'((?:[!#$&+\-.^_`|~0-9A-Za-z]|%[0-9A-Fa-f]{2})*)$/;

/** The parameters from `at` to the end, or undefined when one is malformed. */
function parseParams(
  s: string,
  at: number,
  decodeExtended: boolean,
): Record<string, string> | undefined {
  const params: Record<string, string> = Object.create(null);
  let i = at;
  for (;;) {
    TRAILING_SPACE.lastIndex = i;
    TRAILING_SPACE.exec(s);
    if (TRAILING_SPACE.lastIndex === s.length) return params;
    PARAM.lastIndex = i;
    const m = PARAM.exec(s);
    if (!m) return undefined;
    i = PARAM.lastIndex;
    const name = m[1].toLowerCase();
    let value = m[2] !== undefined ? m[2].replace(/\\(.)/g, '$1') : m[3];
    if (decodeExtended && name.endsWith('*')) {
      if (m[3] === undefined) return undefined;
      const decoded = extendedValue(m[3]);
      if (decoded === undefined) return undefined;
      value = decoded;
    }
    if (params[name] === undefined) params[name] = value;
  }
}

/**
 * Decodes an RFC 8187 ext-value; undefined when malformed or in a charset we cannot decode.
 * Bytes invalid in the charset become U+FFFD, so a mangled filename does not lose its part.
 */
function extendedValue(raw: string): string | undefined {
  const m = EXT_VALUE.exec(raw);
  if (!m) return undefined;
  const bytes = Buffer.from(
    m[2].replace(/%([0-9A-Fa-f]{2})/g, (_all, hex: string) =>
      String.fromCharCode(parseInt(hex, 16)),
    ),
    'latin1',
  );
  try {
    return new TextDecoder(m[1].toLowerCase()).decode(bytes);
  } catch {
    return undefined;
  }
}

/** Parses a Content-Type value (`type/subtype; name=value...`). */
export function parseContentType(s: string): MediaType | undefined {
  const m = MEDIA_TYPE.exec(s);
  if (!m) return undefined;
  const params = parseParams(s, m[0].length, false);
  return params && { type: m[1].toLowerCase(), subtype: m[2].toLowerCase(), params };
}

/** Parses a Content-Disposition value (`form-data; name="x"; filename*=UTF-8''y`). */
export function parseDisposition(s: string): Disposition | undefined {
  const m = LEADING.exec(s);
  if (!m) return undefined;
  const params = parseParams(s, m[0].length, true);
  return params && { type: m[1].toLowerCase(), params };
}

/** The last segment of a client path ('/' or '\' separated); '' for '.' and '..' (RFC 7578 4.2). */
export function basename(path: string): string {
  const last = path.slice(Math.max(path.lastIndexOf('/'), path.lastIndexOf('\\')) + 1);
  return last === '.' || last === '..' ? '' : last;
}
