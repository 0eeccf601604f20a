/**
 * The CLI's envelope for files too large for the JSON API: a fresh data key from
 * generate-data-key (the service wraps it under the key, bound to the encryption context), the
 * file encrypted locally with it by AES-256-GCM in chunks, and only the wrapped key kept. Any
 * size, in constant memory.
 *
 * Layout: the line `keyward-envelope/1`, a line of JSON (the header: kid, version, the wrapped
 * key as a compact JWE, the chunk size and a random 7-byte nonce prefix), then the chunks, each
 * `ciphertext || 16-byte tag`. Chunking follows the STREAM construction (Hoang, Reyhanitabar,
 * Rogaway, Vizár, "Online Authenticated-Encryption and its Nonce-Reuse Misuse-Resistance",
 * CRYPTO 2015): nonce = prefix || 32-bit chunk counter || a final-chunk flag, so chunks cannot be
 * reordered, dropped or the file truncated undetected; every chunk's additional data is the
 * header line, so the header cannot be changed either.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/** First line of an envelope: what `keyward decrypt` recognises. */
export const ENVELOPE_MAGIC = 'keyward-envelope/1\n';
/** Plaintext bytes per chunk. */
export const CHUNK = 64 * 1024;
const TAG = 16;
/** Longest header line read before the input is judged not an envelope. */
const MAX_HEADER = 64 * 1024;

/** The header line's members. */
export interface EnvelopeHeader {
  kid: string;
  version: number;
  /** The data key, wrapped by the service (compact JWE; `keyward decrypt` unwraps it). */
  wrappedKey: string;
  enc: 'A256GCM';
  chunk: number;
  /** base64url of the 7-byte nonce prefix. */
  noncePrefix: string;
}

/** The envelope's failure: one message whatever failed (tag, order, truncation), as the service's decryption-failed. */
export class EnvelopeError extends Error {
  constructor(message = 'the envelope does not decrypt: altered, truncated or not for this key') {
    super(message);
    this.name = 'EnvelopeError';
  }
}

function nonce(prefix: Buffer, counter: number, last: boolean): Buffer {
  const n = Buffer.alloc(12);
  prefix.copy(n, 0);
  n.writeUInt32BE(counter, 7);
  n[11] = last ? 1 : 0;
  return n;
}

/** Re-chunks a byte stream into `size` blocks, telling which block is the last (it may be empty). */
async function* blocks(
  input: AsyncIterable<Buffer>,
  size: number,
): AsyncGenerator<[Buffer, boolean]> {
  let pending: Buffer = Buffer.alloc(0);
  let held: Buffer | null = null;
  for await (const chunk of input) {
    pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
    while (pending.length >= size) {
      if (held) yield [held, false];
      held = pending.subarray(0, size);
      pending = pending.subarray(size);
    }
  }
  if (pending.length === 0 && held) yield [held, true];
  else {
    if (held) yield [held, false];
    yield [pending, true];
  }
}

/** The header line for a data key the service generated. */
export function headerLine(h: Omit<EnvelopeHeader, 'enc' | 'chunk' | 'noncePrefix'>): Buffer {
  const header: EnvelopeHeader = {
    ...h,
    enc: 'A256GCM',
    chunk: CHUNK,
    noncePrefix: randomBytes(7).toString('base64url'),
  };
  return Buffer.from(`${JSON.stringify(header)}\n`, 'utf8');
}

/** Encrypts `input` under `key` (32 bytes) as the chunks following `header` (which it also yields first, after the magic line). */
export async function* sealEnvelope(
  input: AsyncIterable<Buffer>,
  key: Buffer,
  header: Buffer,
): AsyncGenerator<Buffer> {
  const h = JSON.parse(header.toString('utf8')) as EnvelopeHeader;
  const prefix = Buffer.from(h.noncePrefix, 'base64url');
  yield Buffer.from(ENVELOPE_MAGIC, 'utf8');
  yield header;
  let counter = 0;
  for await (const [block, last] of blocks(input, h.chunk)) {
    const cipher = createCipheriv('aes-256-gcm', key, nonce(prefix, counter++, last));
    cipher.setAAD(header);
    yield Buffer.concat([cipher.update(block), cipher.final(), cipher.getAuthTag()]);
  }
}

/** What starts an input: an envelope's header, or none (then `rest` is the whole input again). */
export type Opened =
  | { header: EnvelopeHeader; line: Buffer; rest: AsyncIterable<Buffer> }
  | { header: null; rest: AsyncIterable<Buffer> };

/** Reads the magic line and the header of an envelope from the start of `input`. */
export async function openHeader(input: AsyncIterable<Buffer>): Promise<Opened> {
  const it = input[Symbol.asyncIterator]();
  let buf: Buffer = Buffer.alloc(0);
  async function* from(start: Buffer) {
    if (start.length) yield start;
    for (;;) {
      const next = await it.next();
      if (next.done) return;
      yield next.value as Buffer;
    }
  }
  const magic = Buffer.from(ENVELOPE_MAGIC, 'utf8');
  const isMagic = () => buf.subarray(0, magic.length).equals(magic.subarray(0, buf.length));
  let end = -1;
  for (;;) {
    if (!isMagic()) return { header: null, rest: from(buf) };
    end = buf.length > magic.length ? buf.indexOf(0x0a, magic.length) : -1;
    if (end >= 0) break;
    if (buf.length > MAX_HEADER) throw new EnvelopeError('the envelope header is too long');
    const next = await it.next();
    if (next.done) {
      if (buf.length < magic.length) return { header: null, rest: from(buf) };
      throw new EnvelopeError('the envelope is truncated in its header');
    }
    buf = Buffer.concat([buf, next.value as Buffer]);
  }
  const line = buf.subarray(magic.length, end + 1);
  let header: EnvelopeHeader;
  try {
    header = JSON.parse(line.toString('utf8')) as EnvelopeHeader;
  } catch {
    throw new EnvelopeError('the envelope header is not JSON');
  }
  if (
    header?.enc !== 'A256GCM' ||
    !Number.isInteger(header.chunk) ||
    header.chunk < 1 ||
    header.chunk > 16 * 1024 * 1024 ||
    typeof header.wrappedKey !== 'string' ||
    Buffer.from(String(header.noncePrefix), 'base64url').length !== 7
  )
    throw new EnvelopeError('the envelope header is not one this CLI writes');
  return { header, line, rest: from(buf.subarray(end + 1)) };
}

/** Decrypts the chunks after the header with the unwrapped data key; throws EnvelopeError on any change. */
export async function* openEnvelope(
  rest: AsyncIterable<Buffer>,
  key: Buffer,
  header: EnvelopeHeader,
  line: Buffer,
): AsyncGenerator<Buffer> {
  const prefix = Buffer.from(header.noncePrefix, 'base64url');
  let counter = 0;
  for await (const [block, last] of blocks(rest, header.chunk + TAG)) {
    if (block.length < TAG) throw new EnvelopeError();
    const decipher = createDecipheriv('aes-256-gcm', key, nonce(prefix, counter++, last));
    decipher.setAAD(line);
    decipher.setAuthTag(block.subarray(block.length - TAG));
    const clear = decipher.update(block.subarray(0, block.length - TAG));
    try {
      decipher.final();
    } catch {
      throw new EnvelopeError();
    }
    yield clear;
  }
}
