/**
 * MIME entities as they sit in mail archives (RFC 2045, RFC 5322): a header block read under a
 * cap, with CRLF or bare LF line ends (files saved on Unix, or OpenSSL's own S/MIME output, which
 * ends header lines in LF and canonical content lines in CRLF), folded lines and repeated
 * fields; then the body decoded by its Content-Transfer-Encoding while it streams.
 */
import { decodeBase64, type Base64Fault } from './base64.ts';

/** A stream of chunks that can be looked into and given back (what the readers here share). */
export class ByteSource implements AsyncIterable<Buffer> {
  #it: AsyncIterator<Uint8Array>;
  #back: Buffer[] = [];
  #done = false;

  constructor(input: AsyncIterable<Uint8Array>) {
    this.#it = input[Symbol.asyncIterator]();
  }

  /** The next chunk, or null at the end. */
  async pull(): Promise<Buffer | null> {
    const b = this.#back.pop();
    if (b) return b;
    if (this.#done) return null;
    const r = await this.#it.next();
    if (r.done) {
      this.#done = true;
      return null;
    }
    const c = r.value;
    return Buffer.isBuffer(c) ? c : Buffer.from(c.buffer, c.byteOffset, c.byteLength);
  }

  /** Gives bytes back: the next pull answers them first. */
  unshift(b: Buffer): void {
    if (b.length) this.#back.push(b);
  }

  /** Up to n first bytes without consuming them (fewer at the end of the input). */
  async peek(n: number): Promise<Buffer> {
    const held: Buffer[] = [];
    let got = 0;
    while (got < n) {
      const c = await this.pull();
      if (!c) break;
      held.push(c);
      got += c.length;
    }
    const all = held.length === 1 ? held[0] : Buffer.concat(held);
    this.unshift(all);
    return all.subarray(0, n);
  }

  /** Ends the underlying input early (its cleanup runs). */
  async close(): Promise<void> {
    this.#back = [];
    this.#done = true;
    await this.#it.return?.();
  }

  /** Reads to the end; a consumer that stops early (return or throw) ends the input too. */
  async *[Symbol.asyncIterator](): AsyncGenerator<Buffer> {
    let ended = false;
    try {
      for (let c = await this.pull(); c; c = await this.pull()) yield c;
      ended = true;
    } finally {
      if (!ended) await this.close();
    }
  }
}

/** What went wrong in an entity: the caller maps each to its problem. */
export type EntityFault =
  | { kind: 'headers-too-large'; max: number }
  | { kind: 'no-body' }
  | { kind: 'bad-header'; line: string }
  | { kind: 'base64'; fault: Base64Fault; at: number }
  | { kind: 'quoted-printable'; why: string }
  | { kind: 'transfer-encoding'; name: string };

export interface EntityOptions {
  /** Largest header block; the read stops there, whatever the rest holds. */
  maxHeaderBytes: number;
  fault: (f: EntityFault) => Error;
}

/** Most header fields kept from one block (the rest are counted and dropped). */
const MAX_FIELDS = 100;

/**
 * Where the first blank line of `b` is: the first line end followed by another (`\r?\n\r?\n`),
 * or at the very start of a block a line end alone. Searched in the bytes, so a header block
 * read with the body in one chunk costs no string of the body.
 */
function blankLine(b: Buffer, atStart: boolean): { index: number; length: number } | null {
  if (atStart && (b[0] === 10 || (b[0] === 13 && b[1] === 10)))
    return { index: 0, length: b[0] === 10 ? 1 : 2 };
  for (let i = b.indexOf(10); i !== -1; i = b.indexOf(10, i + 1)) {
    const next = b[i + 1] === 10 ? 1 : b[i + 1] === 13 && b[i + 2] === 10 ? 2 : 0;
    if (next === 0) continue;
    const cr = i > 0 && b[i - 1] === 13 ? 1 : 0;
    return { index: i - cr, length: cr + 1 + next };
  }
  return null;
}

/**
 * Reads a header block up to and including its blank line; answers the fields (names
 * lower-cased, the first of a repeated name wins, folded lines unfolded per RFC 5322 2.2.3)
 * and leaves the source at the first body byte. A block that ends without a blank line is an
 * entity without a body.
 */
export async function readHeaderBlock(
  src: ByteSource,
  opts: EntityOptions,
): Promise<Map<string, string>> {
  // Chunks are kept in a list and each searched once (with the 3 bytes before it, where a blank
  // line may begin), so tiny chunks cost no quadratic copying.
  const chunks: Buffer[] = [];
  let held = 0;
  let end = -1;
  let sep = 0;
  let prev: Buffer | null = null;
  for (;;) {
    const c = await src.pull();
    if (!c) throw opts.fault({ kind: 'no-body' });
    chunks.push(c);
    const own = c.subarray(0, opts.maxHeaderBytes + 4);
    const region: Buffer = prev ? Buffer.concat([prev, own]) : own;
    const m = blankLine(region, held === 0);
    if (m) {
      end = held - (prev?.length ?? 0) + m.index;
      sep = m.length;
      held += c.length;
      break;
    }
    held += c.length;
    if (held > opts.maxHeaderBytes)
      throw opts.fault({ kind: 'headers-too-large', max: opts.maxHeaderBytes });
    prev = Buffer.from(region.subarray(-3));
  }
  if (end > opts.maxHeaderBytes)
    throw opts.fault({ kind: 'headers-too-large', max: opts.maxHeaderBytes });
  const all = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
  src.unshift(all.subarray(end + sep));
  return parseFields(all.toString('latin1', 0, end), opts);
}

/** The fields of a header block's text (no blank line in it). */
export function parseFields(
  block: string,
  opts: Pick<EntityOptions, 'fault'>,
): Map<string, string> {
  const fields = new Map<string, string>();
  let last: string | null = null;
  let count = 0;
  for (const raw of block.split('\n')) {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (line[0] === ' ' || line[0] === '\t') {
      if (last === null) throw opts.fault({ kind: 'bad-header', line: line.slice(0, 40) });
      if (fields.get(last) !== undefined && count <= MAX_FIELDS)
        fields.set(last, `${fields.get(last)} ${line.trim()}`);
      continue;
    }
    const colon = line.indexOf(':');
    if (colon <= 0 || !/^[!-9;-~]+$/.test(line.slice(0, colon).trimEnd()))
      throw opts.fault({ kind: 'bad-header', line: line.slice(0, 40) });
    last = line.slice(0, colon).trimEnd().toLowerCase();
    if (++count > MAX_FIELDS) continue;
    if (!fields.has(last)) fields.set(last, line.slice(colon + 1).trim());
  }
  return fields;
}

/** True when the text starts like a header field (`Name:`), the mark of a MIME entity. */
export function looksLikeHeader(first: Buffer): boolean {
  // RFC 5322 allows any printable name; mail uses letters, digits and '-', which JSON and the
  // like never start with.
  return /^[A-Za-z][A-Za-z0-9-]{0,75}:/.test(
    first.toString('latin1', 0, Math.min(first.length, 80)),
  );
}

/** The body bytes of an entity, decoded by its Content-Transfer-Encoding (RFC 2045 section 6). */
export function decodeTransfer(
  encoding: string | undefined,
  body: AsyncIterable<Buffer>,
  fault: EntityOptions['fault'],
): AsyncIterable<Buffer> {
  const name = (encoding ?? '7bit').trim().toLowerCase();
  if (name === 'base64')
    return decodeBase64(body, { fault: (f, at) => fault({ kind: 'base64', fault: f, at }) });
  if (name === 'quoted-printable') return decodeQuotedPrintable(body, fault);
  if (name === '7bit' || name === '8bit' || name === 'binary') return body;
  throw fault({ kind: 'transfer-encoding', name: name.slice(0, 40) });
}

const HEX = /^[0-9A-Fa-f]{2}$/;

/**
 * Quoted-printable (RFC 2045 section 6.7): `=XX` octets, `=` at a line end a soft break, a line
 * break a CRLF; trailing spaces on a line are dropped (rule 3). CMS in quoted-printable is rare and
 * small (it triples binary), so a byte loop is enough.
 */
async function* decodeQuotedPrintable(
  body: AsyncIterable<Buffer>,
  fault: EntityOptions['fault'],
): AsyncGenerator<Buffer> {
  let rest: Buffer = Buffer.alloc(0);
  for await (const c of body) {
    const buf: Buffer = rest.length ? Buffer.concat([rest, c]) : c;
    const out = Buffer.allocUnsafe(buf.length * 2); // a bare LF becomes CRLF
    let o = 0;
    let i = 0;
    let stop = buf.length;
    while (i < buf.length) {
      const b = buf[i];
      if (b === 0x3d) {
        if (buf.length - i < 3) {
          stop = i;
          break;
        }
        const next = buf.toString('latin1', i + 1, i + 3);
        if (next === '\r\n') i += 3;
        else if (next[0] === '\n') i += 2;
        else if (HEX.test(next)) {
          out[o++] = parseInt(next, 16);
          i += 3;
        } else throw fault({ kind: 'quoted-printable', why: `bad escape "=${next}"` });
      } else if (b === 0x0a) {
        // A hard line break: its transport trailing whitespace is not data.
        while (o > 0 && (out[o - 1] === 0x20 || out[o - 1] === 0x09 || out[o - 1] === 0x0d)) o--;
        out[o++] = 0x0d;
        out[o++] = 0x0a;
        i++;
      } else {
        out[o++] = b;
        i++;
      }
    }
    rest = buf.subarray(stop);
    if (o) yield Buffer.from(out.subarray(0, o));
  }
  if (rest.length) {
    const tail = rest.toString('latin1');
    if (tail === '=' || tail === '=\r') return;
    throw fault({ kind: 'quoted-printable', why: 'the input ends inside an escape' });
  }
}
