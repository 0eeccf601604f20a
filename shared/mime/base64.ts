/**
 * The one streaming base64 decoder (RFC 4648 section 4, read as RFC 2045 section 6.8 and
 * RFC 7468 section 3 write it: lines of any length, CRLF or LF, spaces and tabs ignored), for
 * base64 transfer encoding, PEM armour and bare base64 files of any size. Memory is constant:
 * at most one incomplete line (or three characters) is carried to the next chunk.
 *
 * Speed: Buffer.from(text, 'base64') (simdutf in Node 24) skips line ends itself at about
 * 2.8 GB/s of text on the development machine; removing whitespace first with a regular
 * expression halves that, and a byte loop in JavaScript is slower still. So the fast path hands
 * whole lines to Buffer.from as they are, when the text is what every encoder writes: lines of
 * one length, a multiple of 4, each ending in LF or CRLF. A length check of each line end (a few
 * hundred comparisons per chunk) gives the exact count of base64 characters, and a
 * quartet-aligned run of n characters decodes to exactly 3n/4 bytes only when every one of them
 * is in the alphabet (Buffer.from skips others and stops at '='), so anything else (another line
 * length, a padded last line, a stray character) goes to the exact path: whitespace removed,
 * the rest decoded and checked the same way, refused when it still does not add up.
 */

/** Why a base64 stream was refused: the caller maps these to its own problems. */
export type Base64Fault = 'invalid' | 'truncated';

export interface Base64Options {
  /**
   * The caller's problem for a fault (an invalid character or padding, or an input that ends
   * inside a quartet); `at` is the offset in decoded bytes where it was found.
   */
  fault: (kind: Base64Fault, at: number) => Error;
  /** Called with the rest of the text when a '-' ends the base64 (PEM's END line). */
  onDash?: (rest: Buffer) => void;
}

const WHITESPACE = /[\t\n\r ]+/g;
/** Longest text held while waiting for a line end before it is decoded the exact way. */
const MAX_PENDING_LINE = 4096;

/** Decodes a base64 text stream into bytes, chunk by chunk (a pull-based transform). */
export async function* decodeBase64(
  source: AsyncIterable<Buffer>,
  opts: Base64Options,
): AsyncGenerator<Buffer> {
  /** Characters of an incomplete quartet left by the exact path ('' when aligned). */
  let carry = '';
  let decoded = 0;
  let padded = false;
  /** Significant length of the stream's lines: learned from its first line; 0 = not yet, -1 = none. */
  let width = 0;
  /** Text after the last line end, waiting for the rest of its line. */
  let pending: Buffer = Buffer.alloc(0);

  /** The exact path: whitespace out, quartets decoded, up to three characters carried. */
  function exact(bytes: Buffer): Buffer | null {
    let text = carry + bytes.toString('latin1').replace(WHITESPACE, '');
    if (padded && text.length > 0) throw opts.fault('invalid', decoded);
    const end = text.length - (text.length % 4);
    carry = text.slice(end);
    text = text.slice(0, end);
    if (text.length === 0) return null;
    // '=' may only end the stream: a padded final quartet is decoded and then nothing may follow.
    const pad = text.charCodeAt(end - 1) === 0x3d ? (text.charCodeAt(end - 2) === 0x3d ? 2 : 1) : 0;
    if (pad) padded = true;
    const out = Buffer.from(text, 'base64');
    if (out.length !== (end / 4) * 3 - pad) throw opts.fault('invalid', decoded + out.length);
    decoded += out.length;
    return out;
  }

  /**
   * The fast path over the leading lines of `width`: their bytes and the offset after them (the
   * rest, a shorter last line for one, is the exact path's); null when a character in them is
   * not base64. `decoded` is the caller's to advance.
   */
  function lines(region: Buffer): { out: Buffer; end: number } | null {
    let n = 0;
    let p = 0;
    for (;;) {
      const e = p + width;
      if (region[e] === 10) p = e + 1;
      else if (region[e] === 13 && region[e + 1] === 10) p = e + 2;
      else break;
      n += width;
    }
    const out = Buffer.from(region.toString('latin1', 0, p), 'base64');
    return out.length === (n / 4) * 3 ? { out, end: p } : null;
  }

  for await (let chunk of source) {
    let dash = -1;
    if (opts.onDash) {
      dash = chunk.indexOf(0x2d);
      if (dash !== -1) {
        opts.onDash(chunk.subarray(dash));
        chunk = chunk.subarray(0, dash);
      }
    }
    let buf: Buffer = chunk;
    if (pending.length && width > 0 && dash === -1 && carry === '' && !padded) {
      // Finish the held line with the start of this chunk (small), leaving the chunk uncopied.
      const nl = chunk.indexOf(10);
      if (nl !== -1 && nl + pending.length <= MAX_PENDING_LINE) {
        const line = Buffer.concat([pending, chunk.subarray(0, nl + 1)]);
        const r = lines(line);
        if (r && r.end === line.length) {
          decoded += r.out.length;
          if (r.out.length) yield r.out;
          pending = Buffer.alloc(0);
          buf = chunk.subarray(nl + 1);
        }
      }
    }
    if (pending.length) buf = Buffer.concat([pending, chunk]);
    pending = Buffer.alloc(0);
    if (width === 0) {
      // The first line gives the width; nothing is decoded before it is known.
      const nl = buf.indexOf(10);
      if (nl !== -1) {
        const w = nl > 0 && buf[nl - 1] === 13 ? nl - 1 : nl;
        width = w > 0 && w % 4 === 0 ? w : -1;
      } else if (dash === -1 && buf.length <= MAX_PENDING_LINE) {
        pending = Buffer.from(buf);
        continue;
      } else width = -1;
    }
    if (dash === -1 && width > 0 && carry === '' && !padded) {
      const last = buf.lastIndexOf(10);
      if (last === -1 && buf.length <= MAX_PENDING_LINE) {
        pending = Buffer.from(buf);
        continue;
      }
      if (last !== -1) {
        const r = lines(buf.subarray(0, last + 1));
        if (r) {
          decoded += r.out.length;
          if (r.out.length) yield r.out;
          if (r.end === last + 1) {
            // The incomplete line waits for its end (copied: the chunk may be reused).
            pending = Buffer.from(buf.subarray(last + 1));
            continue;
          }
          // A line of another length (the last, shorter one of a small message read in one
          // chunk): it and what follows take the exact path, the lines before it did not.
          buf = buf.subarray(r.end);
        }
      }
    }
    const out = exact(buf);
    if (out) yield out;
    if (dash !== -1) break;
  }
  if (pending.length) {
    const out = exact(pending);
    if (out) yield out;
  }
  if (carry.length > 0) {
    // An unpadded end (2 or 3 characters) is what many encoders write; 1 character is a cut.
    if (carry.length === 1 || padded) throw opts.fault('truncated', decoded);
    const out = Buffer.from(carry, 'base64');
    if (out.length !== carry.length - 1) throw opts.fault('invalid', decoded);
    yield out;
  }
}
