/**
 * ObjectStore on a local directory. Each key is a file under `root`; a put writes into a temp
 * file in `root/.staging` through one file handle, fsyncs it and renames it into place, so
 * readers see the old object or the whole new one, never a partial file. Every key is validated and resolved inside `root`.
 */
import { randomUUID } from 'node:crypto';
import {
  mkdir,
  open,
  readdir,
  rename,
  rmdir,
  stat,
  unlink,
  type FileHandle,
} from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { problem } from '../errors/index.ts';
import { byteChunks, discardBody } from './body.ts';
import { mapFsError } from './errors.ts';
import { assertObjectKey, assertPrefix } from './keys.ts';
import type { ListOptions, ObjectInfo, ObjectStore, PutBody, PutOptions } from './types.ts';

/** The top-level directory holding uploads in progress; no key may start with it. */
export const STAGING_DIR = '.staging';

export interface FsObjectStoreOptions {
  /** Directory holding the objects (created by `init`). */
  root: string;
  /** fsync each object before it becomes visible (default true). */
  fsync?: boolean;
}

function errCode(err: unknown): string {
  return (err as NodeJS.ErrnoException | null)?.code ?? '';
}

const MISSING = new Set(['ENOENT', 'ENOTDIR']);
const COLLISION = new Set(['EISDIR', 'ENOTDIR', 'EEXIST', 'ENOTEMPTY']);
/** Objects up to this size are read whole by `get`, in one read. */
const WHOLE_READ_BYTES = 1024 * 1024;
/** Bytes gathered before one write to the temp file. */
const WRITE_BATCH_BYTES = 256 * 1024;

export class FsObjectStore implements ObjectStore {
  readonly root: string;
  readonly #staging: string;
  readonly #fsync: boolean;

  constructor(opts: FsObjectStoreOptions) {
    this.root = path.resolve(opts.root);
    this.#staging = path.join(this.root, STAGING_DIR);
    this.#fsync = opts.fsync ?? true;
  }

  /** Creates the root and staging directories. */
  async init(): Promise<void> {
    try {
      await mkdir(this.#staging, { recursive: true });
    } catch (err) {
      throw mapFsError(err, 'init');
    }
  }

  /** Resolves a key to its file path; refuses anything that would land outside `root`. */
  pathOf(key: string): string {
    assertObjectKey(key);
    if (key === STAGING_DIR || key.startsWith(`${STAGING_DIR}/`)) {
      throw problem('validation_failed', 'invalid object key: reserved name', {
        details: { field: 'key', reason: 'reserved name' },
      });
    }
    const file = path.resolve(this.root, ...key.split('/'));
    if (!file.startsWith(this.root + path.sep)) {
      throw problem('validation_failed', 'invalid object key: outside the store', {
        details: { field: 'key', reason: 'path traversal' },
      });
    }
    return file;
  }

  async get(key: string): Promise<Readable> {
    const file = this.pathOf(key);
    let handle;
    let size: number;
    try {
      handle = await open(file, 'r');
      const st = await handle.stat();
      if (!st.isFile()) throw Object.assign(new Error('not a file'), { code: 'EISDIR' });
      size = st.size;
    } catch (err) {
      await handle?.close();
      if (MISSING.has(errCode(err)) || errCode(err) === 'EISDIR')
        throw problem('not_found', 'object not found');
      throw mapFsError(err, 'get');
    }
    if (size > WHOLE_READ_BYTES) return handle.createReadStream();
    // A small object (a message of a mailbox) is read whole with one read into a buffer of its
    // size: no stream of 64 KiB reads, no read-ahead buffer larger than the object.
    try {
      const bytes = Buffer.allocUnsafe(size);
      let at = 0;
      while (at < size) {
        const { bytesRead } = await handle.read(bytes, at, size - at, at);
        if (bytesRead === 0) break;
        at += bytesRead;
      }
      return Readable.from(at === size ? [bytes] : [bytes.subarray(0, at)], { objectMode: false });
    } catch (err) {
      throw mapFsError(err, 'get');
    } finally {
      await handle.close();
    }
  }

  async head(key: string): Promise<ObjectInfo | null> {
    const file = this.pathOf(key);
    try {
      const st = await stat(file);
      return st.isFile() ? { key, size: st.size, lastModified: st.mtime } : null;
    } catch (err) {
      if (MISSING.has(errCode(err))) return null;
      throw mapFsError(err, 'head');
    }
  }

  async *list(prefix: string, opts: ListOptions = {}): AsyncGenerator<ObjectInfo> {
    assertPrefix(prefix);
    const cut = prefix.lastIndexOf('/');
    const dirKey = cut >= 0 ? prefix.slice(0, cut) : '';
    const dir = dirKey ? this.pathOf(dirKey) : this.root;
    yield* this.#walk(dir, dirKey ? `${dirKey}/` : '', prefix, opts.startAfter ?? '');
  }

  /**
   * Depth-first walk in S3 key order: a directory sorts as its name followed by '/'. A directory
   * whose every key sorts before `after` is not entered, so a resumed listing costs its page.
   */
  async *#walk(
    dir: string,
    keyPrefix: string,
    prefix: string,
    after: string,
  ): AsyncGenerator<ObjectInfo> {
    let entries;
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch (err) {
      if (MISSING.has(errCode(err))) return;
      throw mapFsError(err, 'list');
    }
    const named = entries.map((entry) => ({
      entry,
      sortKey: entry.isDirectory() ? `${entry.name}/` : entry.name,
    }));
    named.sort((a, b) => (a.sortKey < b.sortKey ? -1 : a.sortKey > b.sortKey ? 1 : 0));
    for (const { entry } of named) {
      const key = keyPrefix + entry.name;
      if (keyPrefix === '' && key === STAGING_DIR) continue;
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) {
        const sub = `${key}/`;
        const passed = sub < after && !after.startsWith(sub);
        if (!passed && (sub.startsWith(prefix) || prefix.startsWith(sub)))
          yield* this.#walk(full, sub, prefix, after);
      } else if (entry.isFile() && key.startsWith(prefix) && key > after) {
        try {
          const st = await stat(full);
          yield { key, size: st.size, lastModified: st.mtime };
        } catch (err) {
          if (!MISSING.has(errCode(err))) throw mapFsError(err, 'list');
        }
      }
    }
  }

  async put(key: string, body: PutBody, opts: PutOptions = {}): Promise<ObjectInfo> {
    let file: string;
    let handle: FileHandle;
    const temp = path.join(this.#staging, `${randomUUID()}.part`);
    try {
      file = this.pathOf(key);
      opts.signal?.throwIfAborted();
      handle = await this.#createTemp(temp);
    } catch (err) {
      discardBody(body);
      throw opts.signal?.aborted ? err : mapFsError(err, 'put');
    }
    let size = 0;
    let mtime: Date | undefined;
    // Errors of the body (or an abort) belong to the caller and pass through untouched.
    let bodyFailed = false;
    try {
      // Small chunks are gathered into one write; a chunk is never copied.
      let batch: Uint8Array[] = [];
      let batched = 0;
      const flush = async () => {
        if (batch.length === 1) await handle.write(batch[0]);
        else if (batch.length > 1) await handle.writev(batch);
        batch = [];
        batched = 0;
      };
      const chunks = byteChunks(body, opts.signal);
      for (;;) {
        let next: IteratorResult<Uint8Array>;
        try {
          next = await chunks.next();
        } catch (err) {
          bodyFailed = true;
          throw err;
        }
        if (next.done) break;
        size += next.value.length;
        batch.push(next.value);
        batched += next.value.length;
        if (batched >= WRITE_BATCH_BYTES) await flush();
      }
      await flush();
      if (this.#fsync) await handle.sync();
      mtime = (await handle.stat()).mtime;
    } catch (err) {
      discardBody(body);
      await handle.close().catch(() => undefined);
      await unlink(temp).catch(() => undefined);
      throw bodyFailed || opts.signal?.aborted ? err : mapFsError(err, 'put');
    }
    try {
      await handle.close();
      await this.#moveIntoPlace(temp, file);
    } catch (err) {
      await unlink(temp).catch(() => undefined);
      if (COLLISION.has(errCode(err)))
        throw problem('conflict', 'object key collides with an existing key prefix');
      throw mapFsError(err, 'put');
    }
    return { key, size, lastModified: mtime };
  }

  /** Opens a new temp file in the staging directory, making that directory when it is missing. */
  async #createTemp(temp: string): Promise<FileHandle> {
    try {
      return await open(temp, 'wx');
    } catch (err) {
      if (errCode(err) !== 'ENOENT') throw err;
      await mkdir(this.#staging, { recursive: true });
      return open(temp, 'wx');
    }
  }

  /**
   * Renames the temp file to its key. The parent directories are made only when the rename finds
   * them missing (new, or pruned by a concurrent delete), so a put into an existing folder costs
   * one rename.
   */
  async #moveIntoPlace(temp: string, file: string): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        await rename(temp, file);
        return;
      } catch (err) {
        if (errCode(err) !== 'ENOENT' || attempt >= 3) throw err;
      }
      await mkdir(path.dirname(file), { recursive: true });
    }
  }

  async delete(key: string): Promise<void> {
    const file = this.pathOf(key);
    try {
      await unlink(file);
    } catch (err) {
      if (MISSING.has(errCode(err)) || errCode(err) === 'EISDIR') return;
      throw mapFsError(err, 'delete');
    }
    await this.#pruneEmptyParents(path.dirname(file));
  }

  /** Removes directories left empty by a delete, up to (not including) the root. */
  async #pruneEmptyParents(dir: string): Promise<void> {
    while (dir.startsWith(this.root + path.sep)) {
      try {
        await rmdir(dir);
      } catch {
        return;
      }
      dir = path.dirname(dir);
    }
  }
}
