/**
 * The TLV vocabulary of X.690 the CMS engine uses: a header as the reader hands it out, and the
 * tests on it. The reader (ber-reader.ts) produces headers; cms-structure.ts interprets them.
 */

/** One TLV header (X.690 section 8.1.2 and 8.1.3). */
export interface BerHeader {
  /** 0 universal, 1 application, 2 context-specific, 3 private. */
  tagClass: number;
  constructed: boolean;
  tag: number;
  /** Content length, or -1 for the indefinite form (X.690 section 8.1.3.6). */
  length: number;
  headerLength: number;
  /** Absolute offset of the header's first byte in the input. */
  offset: number;
  /** The header bytes as read. */
  raw: Buffer;
}

/** Universal tag numbers the engine looks at. */
export const TAG = {
  EOC: 0,
  BOOLEAN: 1,
  INTEGER: 2,
  BIT_STRING: 3,
  OCTET_STRING: 4,
  NULL: 5,
  OID: 6,
  SEQUENCE: 16,
  SET: 17,
} as const;

/** True for the end-of-contents marker 00 00 (X.690 section 8.1.5). */
export function isEoc(h: BerHeader): boolean {
  return h.tagClass === 0 && h.tag === 0 && !h.constructed && h.length === 0;
}

/** True when `h` is a universal element with that tag number. */
export function isUniversal(h: BerHeader, tag: number): boolean {
  return h.tagClass === 0 && h.tag === tag;
}

/** True when `h` is a context-specific [n] element. */
export function isContext(h: BerHeader, tag: number): boolean {
  return h.tagClass === 2 && h.tag === tag;
}
