/**
 * A thread for the local object store's small files. Through `fs/promises`, a put is six
 * thread-pool requests (open, write, fsync, stat, close, rename) and a read four, each waking a
 * pool thread and then the event loop; here the same calls run synchronously in one thread, with
 * one message there and one back, so a put or read of an object up to a size costs less CPU and
 * the event loop still never blocks on the disk (docs/scale.md has the figures). Larger objects
 * stream as before. A thread that fails to start or dies hands its requests back (`null`), and
 * the store does them through `fs/promises` instead.
 */
import { Worker } from 'node:worker_threads';
import { poolThreadEnv } from '../node-flags.ts';

export type FsThreadRequest =
  | { id: number; op: 'put'; temp: string; file: string; bytes: Buffer; fsync: boolean }
  | { id: number; op: 'read'; file: string; maxBytes: number };

export type FsThreadAnswer =
  | { id: number; mtimeMs: number }
  | { id: number; bytes: Buffer }
  | { id: number; large: true }
  | { id: number; error: { code: string; message: string } };

const THREAD = new URL('./fs-thread-worker.ts', import.meta.url);

/** An error as the fs calls throw it: its code is what the store maps. */
const fsError = (e: { code: string; message: string }) =>
  Object.assign(new Error(e.message), { code: e.code });

export type FsThreadCall = FsThreadRequest extends infer R
  ? R extends unknown
    ? Omit<R, 'id'>
    : never
  : never;

/** One lazily started thread (of `file`); `null` from a call means: do it another way. */
export class FsThread {
  readonly #file: URL;
  #worker: Worker | null = null;
  #broken = false;
  #nextId = 0;
  readonly #pending = new Map<number, (a: FsThreadAnswer | null) => void>();

  constructor(file: URL = THREAD) {
    this.#file = file;
  }

  #started(): Worker | null {
    if (this.#worker) return this.#worker;
    if (this.#broken) return null;
    let worker: Worker;
    try {
      worker = new Worker(this.#file, { env: poolThreadEnv() });
    } catch {
      this.#broken = true;
      return null;
    }
    worker.on('message', (a: FsThreadAnswer) => {
      const done = this.#pending.get(a.id);
      this.#pending.delete(a.id);
      if (this.#pending.size === 0) worker.unref();
      if ('bytes' in a) a.bytes = Buffer.from(a.bytes.buffer, a.bytes.byteOffset, a.bytes.length);
      done?.(a);
    });
    const gone = () => {
      if (this.#worker !== worker) return;
      // What it still owed is done the other way; so is everything after.
      this.#worker = null;
      this.#broken = true;
      for (const done of this.#pending.values()) done(null);
      this.#pending.clear();
    };
    worker.on('error', gone);
    worker.on('exit', gone);
    // Held open only while it owes answers, so it never keeps a process alive by itself.
    worker.unref();
    this.#worker = worker;
    return worker;
  }

  /** The thread's answer, or null when there is no thread to ask. */
  ask(request: FsThreadCall): Promise<FsThreadAnswer | null> {
    const worker = this.#started();
    if (!worker) return Promise.resolve(null);
    const id = this.#nextId++;
    return new Promise((resolve) => {
      this.#pending.set(id, resolve);
      if (this.#pending.size === 1) worker.ref();
      try {
        // The bytes to write move to the thread rather than being copied.
        const transfer = request.op === 'put' ? [request.bytes.buffer as ArrayBuffer] : [];
        worker.postMessage({ ...request, id }, transfer);
      } catch {
        this.#pending.delete(id);
        if (this.#pending.size === 0) worker.unref();
        resolve(null);
      }
    });
  }
}

/** The process's file thread: one is enough for a few thousand small files a second. */
const thread = new FsThread();

/**
 * Writes `chunks` to `temp` (made in its directory), fsyncs it when asked and renames it to
 * `file` (its directories made when missing); answers the file's mtime in ms, or null when no
 * thread could do it. Throws what the fs calls threw, with its code; the temp file is removed.
 */
export async function threadPut(
  temp: string,
  file: string,
  chunks: Uint8Array[],
  size: number,
  fsync: boolean,
): Promise<number | null> {
  // One block of its own, moved to the thread: a view would take its whole backing store along.
  const bytes = Buffer.allocUnsafeSlow(size);
  let at = 0;
  for (const c of chunks) {
    bytes.set(c, at);
    at += c.length;
  }
  const a = await thread.ask({ op: 'put', temp, file, bytes, fsync });
  if (!a) return null;
  if ('error' in a) throw fsError(a.error);
  return 'mtimeMs' in a ? a.mtimeMs : null;
}

/**
 * The whole file when it is a regular file of at most `maxBytes`; 'large' beyond; null when no
 * thread could read it. Throws what the fs calls threw, with its code (EISDIR for a directory).
 */
export async function threadRead(file: string, maxBytes: number): Promise<Buffer | 'large' | null> {
  const a = await thread.ask({ op: 'read', file, maxBytes });
  if (!a) return null;
  if ('error' in a) throw fsError(a.error);
  if ('large' in a) return 'large';
  return 'bytes' in a ? a.bytes : null;
}
