/**
 * The object storage contract shared by the filesystem and S3 implementations. Keys are
 * '/'-separated paths (see keys.ts for the rules); listing is by plain string prefix, like S3.
 */
import type { Readable } from 'node:stream';

export interface ObjectInfo {
  key: string;
  size: number;
  etag?: string;
  lastModified?: Date;
}

/** What `put` accepts: a byte stream or any async iterable of byte chunks. */
export type PutBody = AsyncIterable<Uint8Array> | Readable;

export interface ListOptions {
  /** Lists only keys that sort after this one (S3's StartAfter). */
  startAfter?: string;
}

export interface PutOptions {
  contentType?: string;
  /** Aborting stops the upload: nothing becomes visible and `put` rejects with an AbortError. */
  signal?: AbortSignal;
}

export interface ObjectStore {
  /** Streams an object's bytes. not_found problem when missing. */
  get(key: string): Promise<Readable>;
  /** The object's size and version data, or null when it does not exist. */
  head(key: string): Promise<ObjectInfo | null>;
  /**
   * Lists objects whose key starts with `prefix`, in key order (paginated underneath); with
   * `startAfter`, only keys after it (a listing resumed from its cursor).
   */
  list(prefix: string, opts?: ListOptions): AsyncIterable<ObjectInfo>;
  /**
   * Streams `body` into `key` atomically: the object becomes visible only when the whole stream
   * succeeded; on any error nothing new is visible (a previous version stays) and the partial
   * upload is aborted or removed. A Readable body is destroyed on failure.
   */
  put(key: string, body: PutBody, opts?: PutOptions): Promise<ObjectInfo>;
  /** Removes the object; deleting a missing object is not an error. */
  delete(key: string): Promise<void>;
}

/** Where a store reports what it handled itself (a failed abort, a stale temp file); pino-compatible. */
export interface StorageLogger {
  warn(obj: Record<string, unknown>, msg: string): void;
}

export const consoleLogger: StorageLogger = {
  warn: (obj, msg) => console.warn(msg, obj),
};
