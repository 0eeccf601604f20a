/**
 * Bytes held to be read again later: in memory up to SPOOL_MEMORY, then in an anonymous file of
 * this user's private temporary directory (created 0600 and unlinked at once), so the memory a
 * holder takes stays constant whatever the size. Writes go out a megabyte at a time in two
 * alternating buffers, so the producer streams on while the last megabyte is written; the replay
 * reads the next megabyte while the caller works on this one.
 */
import { open, unlink } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { privateTempDir } from './private-dir.ts';
import { problem } from './errors/index.ts';

/** Bytes held in memory before they go to the spool file. */
export const SPOOL_MEMORY = 1024 * 1024;
/**
 * Bytes per write to and read from the spool file. Awaiting each ~112 KiB write before parsing on
 * made the spool the longest stretch of a SignedData conversion (bench/results/design-figures.md).
 */
const SPOOL_IO = 1024 * 1024;

export class Spool {
  #held: Buffer[] = [];
  #heldBytes = 0;
  #file: FileHandle | null = null;
  /** Bytes handed to writes of the spool file. */
  #size = 0;
  /** The buffer being filled, how much of it is, and the other one (written, or free). */
  #fill: Buffer | null = null;
  #filled = 0;
  #spare: Buffer | null = null;
  /** The write in flight (its failure is rethrown by the next wait). */
  #writing: Promise<void> = Promise.resolve();
  #closed = false;

  /** Takes the next bytes (copied: the caller may reuse its buffer once this settles). */
  async update(chunk: Buffer): Promise<void> {
    if (this.#closed) throw new Error('the spool is closed');
    if (!this.#file && this.#heldBytes + chunk.length <= SPOOL_MEMORY) {
      this.#held.push(Buffer.from(chunk));
      this.#heldBytes += chunk.length;
      return;
    }
    if (!this.#file) {
      const file = await openSpool();
      // Closed while the file was opened (an aborted request): close() saw no file to close.
      if (this.#closed) {
        await file.close();
        throw new Error('the spool is closed');
      }
      this.#file = file;
      this.#fill = Buffer.allocUnsafeSlow(SPOOL_IO);
      const held = this.#held;
      this.#held = [];
      for (const b of held) await this.#stage(b);
    }
    await this.#stage(chunk);
  }

  /** Copies bytes into the buffer being filled; a full one starts its write. */
  async #stage(bytes: Buffer): Promise<void> {
    for (let at = 0; at < bytes.length;) {
      const n = bytes.copy(this.#fill!, this.#filled, at);
      this.#filled += n;
      at += n;
      if (this.#filled === SPOOL_IO) await this.#startWrite();
    }
  }

  /** Waits for the write in flight, then writes the filled buffer and fills the other. */
  async #startWrite(): Promise<void> {
    await this.#writing;
    const full = this.#fill!;
    const write = writeAll(this.#file!, full.subarray(0, this.#filled), this.#size);
    // Awaited by the next wait; marked handled so a failure waits for it rather than the process.
    write.catch(() => {});
    this.#writing = write;
    this.#size += this.#filled;
    this.#fill = this.#spare ?? Buffer.allocUnsafeSlow(SPOOL_IO);
    this.#spare = full;
    this.#filled = 0;
  }

  /** Everything taken, in order; a yielded buffer is valid until the next one is asked for. */
  async *content(): AsyncGenerator<Buffer> {
    if (!this.#file) {
      yield* this.#held;
      return;
    }
    if (this.#filled > 0) await this.#startWrite();
    await this.#writing;
    const file = this.#file;
    const size = this.#size;
    const bufs = [this.#fill!, this.#spare ?? Buffer.allocUnsafeSlow(SPOOL_IO)];
    const readAt = async (pos: number, buf: Buffer): Promise<number> => {
      const { bytesRead } = await file.read(buf, 0, Math.min(SPOOL_IO, size - pos), pos);
      if (bytesRead === 0) throw new Error('the spool file is shorter than written');
      return bytesRead;
    };
    // One read ahead: the next megabyte is read while this one is used.
    let next = readAt(0, bufs[0]);
    for (let pos = 0, i = 0; pos < size; i ^= 1) {
      const n = await next;
      pos += n;
      if (pos < size) {
        next = readAt(pos, bufs[i ^ 1]);
        next.catch(() => {});
      }
      yield bufs[i].subarray(0, n);
    }
  }

  /** Drops what is held (idempotent). */
  async close(): Promise<void> {
    this.#closed = true;
    this.#held = [];
    this.#fill = this.#spare = null;
    const f = this.#file;
    this.#file = null;
    await f?.close();
  }
}

/**
 * All of `body`, produced to its end before its first byte is handed on: whatever fails while it
 * is produced fails before anything of it has been seen.
 */
export async function* heldToEnd(body: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
  const spool = new Spool();
  try {
    for await (const c of body) await spool.update(c);
    yield* spool.content();
  } finally {
    await spool.close();
  }
}

/** An anonymous file: created 0600 in this user's private temp directory and unlinked at once. */
async function openSpool(): Promise<FileHandle> {
  const dir = privateTempDir('keyward-spool');
  if (!dir) throw problem('internal', 'no private temporary directory to spool the content in');
  const path = join(dir, randomUUID());
  const f = await open(path, 'wx+', 0o600);
  await unlink(path).catch(() => {});
  return f;
}

async function writeAll(f: FileHandle, b: Buffer, at: number): Promise<void> {
  for (let off = 0; off < b.length;) {
    const { bytesWritten } = await f.write(b, off, b.length - off, at + off);
    off += bytesWritten;
  }
}
