/**
 * The backup file's encryption: a passphrase-keyed stream of AES-256-GCM chunks.
 * - header: magic `KWBACKUP` | version (1) | scrypt log2 N (1), r (1), p (1) | salt (16) |
 *   nonce prefix (7) | check (16). The check (HMAC of the key) tells a wrong passphrase from a
 *   damaged file; scrypt makes it no cheaper to guess through than a chunk's tag.
 * - chunks: length of the ciphertext (u32 BE) | ciphertext | tag (16). Chunk i's nonce is the
 *   prefix | i (u32 BE) | last (0 or 1), its AAD the header: chunks cannot be reordered, dropped,
 *   moved between files, and a file cut after any chunk lacks the one chunk flagged last
 *   (the STREAM construction of Hoang, Reyhanitabar, Rogaway and Vizár, 2015).
 * Memory stays constant: one chunk (64 KiB of plaintext) at a time in either direction.
 */
import {
  createCipheriv,
  createDecipheriv,
  createHmac,
  randomBytes,
  scrypt as scryptCb,
  timingSafeEqual,
} from 'node:crypto';
import { asSecretKey } from '../crypto/secret-key.ts';
import { promisify } from 'node:util';

const scrypt = promisify(scryptCb) as (
  pw: string,
  salt: Buffer,
  len: number,
  opts: object,
) => Promise<Buffer>;

const MAGIC = Buffer.from('KWBACKUP', 'latin1');
const VERSION = 1;
const HEADER_LENGTH = MAGIC.length + 4 + 16 + 7 + 16;
/** Plaintext bytes per chunk. */
const CHUNK = 64 * 1024;
const MAX_CHUNK = CHUNK + 16;

/** A backup file that cannot be read (wrong passphrase, truncated, altered, not a backup). */
export class BackupFileError extends Error {
  override name = 'BackupFileError';
}

/**
 * The scrypt cost every backup is written with: log2 N, r, p (about 32 MiB and a tenth of a
 * second). A reader accepts these only: the header is read before the passphrase can be checked,
 * so any cost it may name is a cost anyone who hands over a file can make a restore pay (the
 * highest the old range allowed took 2 GiB and two minutes before saying the passphrase is wrong).
 */
const SCRYPT = Object.freeze({ logN: 15, r: 8, p: 1 });

async function keyOf(passphrase: string, salt: Buffer, logN: number, r: number, p: number) {
  if (logN !== SCRYPT.logN || r !== SCRYPT.r || p !== SCRYPT.p)
    throw new BackupFileError(
      `the backup header asks for scrypt parameters N=2^${logN}, r=${r}, p=${p}; this version reads only the ones it writes (N=2^${SCRYPT.logN}, r=${SCRYPT.r}, p=${SCRYPT.p}): the file was altered or not written by keyward backup`,
    );
  const N = 2 ** logN;
  return scrypt(passphrase, salt, 32, { N, r, p, maxmem: 256 * N * r + 1024 * 1024 });
}

const checkOf = (key: Buffer) =>
  createHmac('sha256', key).update('keyward-backup-passphrase-check').digest().subarray(0, 16);

function nonce(prefix: Buffer, i: number, last: boolean): Buffer {
  const n = Buffer.alloc(12);
  prefix.copy(n, 0);
  n.writeUInt32BE(i, 7);
  n[11] = last ? 1 : 0;
  return n;
}

/** Encrypts a stream of plaintext bytes under `passphrase`, yielding the file's bytes. */
export async function* encryptBackup(
  plaintext: AsyncIterable<Buffer | string> | Iterable<Buffer | string>,
  passphrase: string,
): AsyncGenerator<Buffer> {
  const salt = randomBytes(16);
  const prefix = randomBytes(7);
  const { logN, r, p } = SCRYPT;
  const key = await keyOf(passphrase, salt, logN, r, p);
  const header = Buffer.concat([MAGIC, Buffer.of(VERSION, logN, r, p), salt, prefix, checkOf(key)]);
  yield header;
  let i = 0;
  const seal = (data: Buffer, last: boolean) => {
    const cipher = createCipheriv('aes-256-gcm', asSecretKey(key), nonce(prefix, i++, last));
    cipher.setAAD(header);
    const body = Buffer.concat([cipher.update(data), cipher.final(), cipher.getAuthTag()]);
    const len = Buffer.alloc(4);
    len.writeUInt32BE(body.length);
    return Buffer.concat([len, body]);
  };
  let pending: Buffer[] = [];
  let size = 0;
  for await (const part of plaintext) {
    const buf = typeof part === 'string' ? Buffer.from(part, 'utf8') : part;
    pending.push(buf);
    size += buf.length;
    while (size >= CHUNK) {
      const all = Buffer.concat(pending);
      yield seal(all.subarray(0, CHUNK), false);
      pending = [all.subarray(CHUNK)];
      size = all.length - CHUNK;
    }
  }
  yield seal(Buffer.concat(pending), true);
}

/** Reads exactly what the file holds, chunk by chunk, from a byte stream. */
class ByteReader {
  private buffered: Buffer[] = [];
  private size = 0;
  private readonly it: AsyncIterator<Buffer | string>;
  private done = false;
  constructor(source: AsyncIterable<Buffer | string>) {
    this.it = source[Symbol.asyncIterator]();
  }
  /** `n` bytes, or fewer at the end of the stream. */
  async read(n: number): Promise<Buffer> {
    while (this.size < n && !this.done) {
      const r = await this.it.next();
      if (r.done) this.done = true;
      else {
        const b = typeof r.value === 'string' ? Buffer.from(r.value) : r.value;
        this.buffered.push(b);
        this.size += b.length;
      }
    }
    const all = Buffer.concat(this.buffered);
    const out = all.subarray(0, n);
    this.buffered = [all.subarray(out.length)];
    this.size = all.length - out.length;
    return out;
  }
}

/**
 * Decrypts a backup file, yielding its plaintext chunk by chunk; throws BackupFileError on a
 * wrong passphrase, a damaged or cut file, or bytes after the last chunk. A caller that must
 * not act on unverified data reads it all once first (restore does).
 */
export async function* decryptBackup(
  file: AsyncIterable<Buffer | string>,
  passphrase: string,
): AsyncGenerator<Buffer> {
  const reader = new ByteReader(file);
  const header = await reader.read(HEADER_LENGTH);
  if (header.length < HEADER_LENGTH || !header.subarray(0, MAGIC.length).equals(MAGIC))
    throw new BackupFileError('this is not a Keyward backup file (its header is missing)');
  if (header[MAGIC.length] !== VERSION)
    throw new BackupFileError(`backup file format ${header[MAGIC.length]} is not supported`);
  const at = MAGIC.length + 1;
  const salt = header.subarray(at + 3, at + 19);
  const prefix = header.subarray(at + 19, at + 26);
  const key = await keyOf(passphrase, salt, header[at], header[at + 1], header[at + 2]);
  if (!timingSafeEqual(checkOf(key), header.subarray(at + 26, at + 42)))
    throw new BackupFileError('the passphrase is wrong (or the backup header was altered)');
  for (let i = 0; ; i++) {
    const len = await reader.read(4);
    if (len.length === 0)
      throw new BackupFileError('the backup file is truncated: its last chunk is missing');
    if (len.length < 4) throw new BackupFileError(`the backup file is truncated in chunk ${i}`);
    const n = len.readUInt32BE();
    if (n < 16 || n > MAX_CHUNK)
      throw new BackupFileError(`the backup file is damaged: chunk ${i} has a bad length`);
    const body = await reader.read(n);
    if (body.length < n) throw new BackupFileError(`the backup file is truncated in chunk ${i}`);
    const open = (last: boolean) => {
      const d = createDecipheriv('aes-256-gcm', asSecretKey(key), nonce(prefix, i, last));
      d.setAAD(header);
      d.setAuthTag(body.subarray(n - 16));
      return Buffer.concat([d.update(body.subarray(0, n - 16)), d.final()]);
    };
    let plain: Buffer;
    let last = false;
    try {
      plain = open(false);
    } catch {
      try {
        plain = open(true);
        last = true;
      } catch {
        throw new BackupFileError(
          `the backup file is damaged: chunk ${i} fails its integrity check`,
        );
      }
    }
    yield plain;
    if (last) {
      if ((await reader.read(1)).length > 0)
        throw new BackupFileError('the backup file has bytes after its last chunk');
      return;
    }
  }
}
