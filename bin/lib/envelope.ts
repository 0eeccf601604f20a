/**
 * The CLI's envelope for files too large for the JSON API: a fresh data key from
 * generate-data-key (the service wraps it under the key, bound to the encryption context), the
 * file encrypted locally with it by AES-256-GCM in chunks, and only the wrapped key kept. Any
 * size, in constant memory.
 *
 * Layout (`keyward-envelope/2`): the magic line, the key line (JSON: kid, version, the wrapped
 * data key as a compact JWE), the body line (JSON: cipher, chunk size, a random 7-byte nonce
 * prefix), then the chunks, each `ciphertext || 16-byte tag`. Chunking follows the STREAM
 * construction (Hoang, Reyhanitabar, Rogaway, Vizár, "Online Authenticated-Encryption and its
 * Nonce-Reuse Misuse-Resistance", CRYPTO 2015): nonce = prefix || 32-bit chunk counter || a
 * final-chunk flag, so chunks cannot be reordered, dropped or the file truncated undetected; every
 * chunk's additional data is the body line, so its parameters cannot be changed either.
 *
 * The key line is outside the additional data on purpose: `keyward re-encrypt` replaces it (the
 * service re-wraps the data key under the key's newest version or another key) and copies the
 * chunks as they are, so neither the file nor its data key is ever in clear here. Changing the
 * wrapped key gains nothing: another data key fails every tag. Format 1 (`keyward-envelope/1`,
 * one header line with all members, itself the additional data) is still read.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/** First line of an envelope: what `keyward decrypt` recognises. */
export const ENVELOPE_MAGIC = 'keyward-envelope/2\n';
/** The first format's magic line (same length). */
const MAGIC_V1 = 'keyward-envelope/1\n';
/** Plaintext bytes per chunk. */
export const CHUNK = 64 * 1024;
const TAG = 16;
/** Longest header line read before the input is judged not an envelope. */
const MAX_HEADER = 64 * 1024;

/** The key line's members: which key wraps the data key, and the wrapped key. */
export interface EnvelopeKey {
  kid: string;
  version: number;
  /** The data key, wrapped by the service (compact JWE; `keyward decrypt` unwraps it). */
  wrappedKey: string;
}

/** The body line's members: how the chunks are sealed. */
export interface EnvelopeBody {
  enc: 'A256GCM';
  chunk: number;
  /** base64url of the 7-byte nonce prefix. */
  noncePrefix: string;
}

/** Everything the header lines say. */
export type EnvelopeHeader = EnvelopeKey & EnvelopeBody;

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

/** The key line for a data key the service wrapped. */
export function keyLine(k: EnvelopeKey): Buffer {
  const key: EnvelopeKey = { kid: k.kid, version: k.version, wrappedKey: k.wrappedKey };
  return Buffer.from(`${JSON.stringify(key)}\n`, 'utf8');
}

/** A body line with a fresh nonce prefix: one per data key and sealing. */
export function bodyLine(): Buffer {
  const body: EnvelopeBody = {
    enc: 'A256GCM',
    chunk: CHUNK,
    noncePrefix: randomBytes(7).toString('base64url'),
  };
  return Buffer.from(`${JSON.stringify(body)}\n`, 'utf8');
}

/** Encrypts `input` under `key` (32 bytes): the magic, key and body lines, then the chunks. */
export async function* sealEnvelope(
  input: AsyncIterable<Buffer>,
  key: Buffer,
  keyBytes: Buffer,
  body: Buffer,
): AsyncGenerator<Buffer> {
  const b = JSON.parse(body.toString('utf8')) as EnvelopeBody;
  const prefix = Buffer.from(b.noncePrefix, 'base64url');
  yield Buffer.from(ENVELOPE_MAGIC, 'utf8');
  yield keyBytes;
  yield body;
  let counter = 0;
  for await (const [block, last] of blocks(input, b.chunk)) {
    const cipher = createCipheriv('aes-256-gcm', key, nonce(prefix, counter++, last));
    cipher.setAAD(body);
    yield Buffer.concat([cipher.update(block), cipher.final(), cipher.getAuthTag()]);
  }
}

/** The same envelope under a re-wrapped data key: the new key line, the body line and the chunks as they were. */
export async function* rewrapEnvelope(
  keyBytes: Buffer,
  aad: Buffer,
  rest: AsyncIterable<Buffer>,
): AsyncGenerator<Buffer> {
  yield Buffer.from(ENVELOPE_MAGIC, 'utf8');
  yield keyBytes;
  yield aad;
  yield* rest;
}

/**
 * What starts an input: an envelope's header (its format, and `aad`, the bytes every chunk is
 * bound to), or none (then `rest` is the whole input again).
 */
export type Opened =
  | { header: EnvelopeHeader; format: 1 | 2; aad: Buffer; rest: AsyncIterable<Buffer> }
  | { header: null; rest: AsyncIterable<Buffer> };

const parseLine = (line: Buffer): Record<string, unknown> => {
  try {
    const v: unknown = JSON.parse(line.toString('utf8'));
    if (v && typeof v === 'object' && !Array.isArray(v)) return v as Record<string, unknown>;
  } catch {
    // answered below
  }
  throw new EnvelopeError('the envelope header is not JSON');
};

/** Reads the magic line and the header lines of an envelope from the start of `input`. */
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
  const magics = [Buffer.from(ENVELOPE_MAGIC, 'utf8'), Buffer.from(MAGIC_V1, 'utf8')];
  const size = magics[0].length;
  const prefixOf = (m: Buffer) => buf.subarray(0, size).equals(m.subarray(0, buf.length));
  /** The ends of the header lines after the magic, once all `count` have arrived. */
  const lineEnds = (count: number): number[] | null => {
    const ends: number[] = [];
    let from = size;
    while (ends.length < count) {
      const end = buf.indexOf(0x0a, from);
      if (end < 0) return null;
      ends.push(end);
      from = end + 1;
    }
    return ends;
  };
  let ends: number[] | null = null;
  let format: 1 | 2 = 2;
  for (;;) {
    if (!magics.some(prefixOf)) return { header: null, rest: from(buf) };
    if (buf.length >= size) {
      format = buf.subarray(0, size).equals(magics[0]) ? 2 : 1;
      ends = lineEnds(format === 2 ? 2 : 1);
      if (ends) break;
    }
    if (buf.length > MAX_HEADER) throw new EnvelopeError('the envelope header is too long');
    const next = await it.next();
    if (next.done) {
      if (buf.length < size) return { header: null, rest: from(buf) };
      throw new EnvelopeError('the envelope is truncated in its header');
    }
    buf = Buffer.concat([buf, next.value as Buffer]);
  }
  const first = buf.subarray(size, ends[0] + 1);
  const aad = format === 2 ? buf.subarray(ends[0] + 1, ends[1] + 1) : first;
  // Each member from its own line: the key line, outside the additional data, sets nothing else.
  const k = parseLine(first);
  const b = parseLine(aad);
  const header = {
    kid: k.kid,
    version: k.version,
    wrappedKey: k.wrappedKey,
    enc: b.enc,
    chunk: b.chunk,
    noncePrefix: b.noncePrefix,
  } as EnvelopeHeader;
  if (
    header.enc !== 'A256GCM' ||
    !Number.isInteger(header.chunk) ||
    header.chunk < 1 ||
    header.chunk > 16 * 1024 * 1024 ||
    typeof header.wrappedKey !== 'string' ||
    Buffer.from(String(header.noncePrefix), 'base64url').length !== 7
  )
    throw new EnvelopeError('the envelope header is not one this CLI writes');
  return { header, format, aad, rest: from(buf.subarray(ends.at(-1)! + 1)) };
}

/** Decrypts the chunks after the header with the unwrapped data key; throws EnvelopeError on any change. */
export async function* openEnvelope(
  rest: AsyncIterable<Buffer>,
  key: Buffer,
  header: EnvelopeHeader,
  aad: Buffer,
): AsyncGenerator<Buffer> {
  const prefix = Buffer.from(header.noncePrefix, 'base64url');
  let counter = 0;
  for await (const [block, last] of blocks(rest, header.chunk + TAG)) {
    if (block.length < TAG) throw new EnvelopeError();
    const decipher = createDecipheriv('aes-256-gcm', key, nonce(prefix, counter++, last));
    decipher.setAAD(aad);
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
