/**
 * ObjectStore on an S3-compatible server (MinIO, AWS S3, s3rver in tests) through the minio
 * client. Requests carry a timeout (see s3-transport.ts); transient failures of idempotent
 * requests are retried a few times with backoff, then reported as the transient
 * storage_unavailable problem.
 */
import type { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from 'minio';
import { AppError } from '../errors/index.ts';
import { discardBody, relay } from './body.ts';
import { isTransientStorageError, mapS3Error, storageUnavailable } from './errors.ts';
import { assertObjectKey, assertPrefix } from './keys.ts';
import { timeoutTransport } from './s3-transport.ts';
import { streamUpload } from './s3-upload.ts';
import type {
  ListOptions,
  ObjectInfo,
  ObjectStore,
  PutBody,
  PutOptions,
  StorageLogger,
} from './types.ts';
import { consoleLogger } from './types.ts';

const MiB = 1024 * 1024;
/** S3 refuses parts under 5 MiB (except the last one). */
export const MIN_PART_SIZE = 5 * MiB;

export interface S3ObjectStoreOptions {
  /** e.g. http://127.0.0.1:9000 (path-style addressing; no path part). */
  endpoint: string;
  accessKey: string;
  secretKey: string;
  bucket: string;
  region?: string;
  /** Multipart part size in bytes (default 8 MiB, at least 5 MiB); memory use is about two parts. */
  partSize?: number;
  /** Longest wait without progress for one request, in ms (default 30 000). */
  requestTimeoutMs?: number;
  /** Retries of an idempotent request after a transient failure (default 2). */
  maxRetries?: number;
  /** First retry delay in ms, doubled each retry (default 200). */
  retryDelayMs?: number;
  /** Keys per list request (default and maximum 1000). */
  listPageSize?: number;
  logger?: StorageLogger;
}

interface Endpoint {
  host: string;
  port: number;
  secure: boolean;
}

function parseEndpoint(endpoint: string): Endpoint {
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    throw new TypeError(`S3 endpoint is not a URL: ${endpoint}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new TypeError('S3 endpoint must be http or https');
  if (url.pathname !== '/' || url.search || url.username)
    throw new TypeError('S3 endpoint must not carry a path, query or credentials');
  const secure = url.protocol === 'https:';
  return {
    host: url.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: url.port ? Number(url.port) : secure ? 443 : 80,
    secure,
  };
}

export class S3ObjectStore implements ObjectStore {
  readonly bucket: string;
  readonly client: Client;
  readonly #region: string;
  readonly #partSize: number;
  readonly #maxRetries: number;
  readonly #retryDelayMs: number;
  readonly #pageSize: number;
  readonly #logger: StorageLogger;

  constructor(opts: S3ObjectStoreOptions) {
    const { host, port, secure } = parseEndpoint(opts.endpoint);
    this.bucket = opts.bucket;
    this.#region = opts.region ?? 'us-east-1';
    this.#partSize = opts.partSize ?? 8 * MiB;
    if (!Number.isInteger(this.#partSize) || this.#partSize < MIN_PART_SIZE)
      throw new RangeError('S3 part size must be an integer of at least 5 MiB');
    this.#maxRetries = opts.maxRetries ?? 2;
    this.#retryDelayMs = opts.retryDelayMs ?? 200;
    this.#pageSize = Math.min(Math.max(1, opts.listPageSize ?? 1000), 1000);
    this.#logger = opts.logger ?? consoleLogger;
    this.client = new Client({
      endPoint: host,
      port,
      useSSL: secure,
      accessKey: opts.accessKey,
      secretKey: opts.secretKey,
      region: this.#region,
      pathStyle: true,
      transport: timeoutTransport(secure, opts.requestTimeoutMs ?? 30_000),
      // Retries happen in #call, which also covers network errors.
      retryOptions: { disableRetry: true },
    });
  }

  /** Creates the bucket when it does not exist yet. */
  async ensureBucket(): Promise<void> {
    const exists = await this.#call(
      'ensureBucket',
      () => this.client.bucketExists(this.bucket),
      true,
    );
    if (exists) return;
    try {
      await this.#call(
        'ensureBucket',
        () => this.client.makeBucket(this.bucket, this.#region),
        false,
      );
    } catch (err) {
      // Another instance may have created it in the meantime.
      const code = (err as { code?: unknown }).code;
      if (code !== 'BucketAlreadyOwnedByYou') throw err;
    }
  }

  /** Runs one request, retrying transient failures when it is idempotent; errors come out mapped. */
  async #call<T>(op: string, fn: () => Promise<T>, retry: boolean, objectOp = false): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await fn();
      } catch (err) {
        const mapped = mapS3Error(err, op, objectOp);
        if (!retry || attempt >= this.#maxRetries || !isTransientStorageError(mapped)) throw mapped;
        await sleep(this.#retryDelayMs * 2 ** attempt);
      }
    }
  }

  async get(key: string): Promise<Readable> {
    assertObjectKey(key);
    const res = await this.#call('get', () => this.client.getObject(this.bucket, key), true, true);
    return relay(res, (err) => mapS3Error(err, 'get', true));
  }

  async head(key: string): Promise<ObjectInfo | null> {
    assertObjectKey(key);
    try {
      const st = await this.#call(
        'head',
        () => this.client.statObject(this.bucket, key),
        true,
        true,
      );
      return { key, size: st.size, etag: st.etag || undefined, lastModified: st.lastModified };
    } catch (err) {
      if (err instanceof AppError && err.code === 'not_found') return null;
      throw err;
    }
  }

  /**
   * Pages with ListObjects (v1) and the last key as marker: every S3-compatible server has it,
   * while s3rver cannot mint v2 continuation tokens on Node 24 (they use DES).
   */
  async *list(prefix: string, opts: ListOptions = {}): AsyncGenerator<ObjectInfo> {
    assertPrefix(prefix);
    // The marker is S3's StartAfter: the listing begins after it.
    let marker = opts.startAfter ?? '';
    for (;;) {
      const page = await this.#call(
        'list',
        () =>
          this.client.listObjectsQuery(this.bucket, prefix, marker, {
            Delimiter: '',
            MaxKeys: this.#pageSize,
          }),
        true,
      );
      let last = '';
      for (const item of page.objects) {
        if (item.name === undefined) continue;
        last = item.name;
        yield {
          key: item.name,
          size: item.size ?? 0,
          etag: item.etag || undefined,
          lastModified: item.lastModified,
        };
      }
      if (!page.isTruncated) return;
      const next = page.nextMarker || last;
      if (!next || next === marker)
        throw storageUnavailable('object storage returned an inconsistent listing', {
          details: { op: 'list' },
          transient: true,
        });
      marker = next;
    }
  }

  async put(key: string, body: PutBody, opts: PutOptions = {}): Promise<ObjectInfo> {
    try {
      assertObjectKey(key);
      opts.signal?.throwIfAborted();
    } catch (err) {
      discardBody(body);
      throw err;
    }
    const { size, etag } = await streamUpload(
      {
        client: this.client,
        bucket: this.bucket,
        key,
        partSize: this.#partSize,
        contentType: opts.contentType,
        signal: opts.signal,
        logger: this.#logger,
        call: (op, fn, retry) => this.#call(op, fn, retry),
      },
      body,
    );
    return { key, size, etag: etag || undefined };
  }

  async delete(key: string): Promise<void> {
    assertObjectKey(key);
    await this.#call('delete', () => this.client.removeObject(this.bucket, key), true);
  }
}
