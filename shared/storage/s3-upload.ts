/**
 * Streaming multipart upload with bounded memory: the body is copied into part buffers of
 * `partSize` bytes; one part uploads while the next one fills, so at most two parts are held.
 * S3 allows 10,000 parts, so the part size doubles every 1,000 parts (8 MiB parts cover the
 * first 8 GiB, 16 MiB parts the next 16 GiB, and so on): memory grows only for huge objects.
 * A body that fits in one part goes up in a single PUT. Nothing is visible until the final
 * PUT or CompleteMultipartUpload; on failure the multipart upload is aborted (a failed abort is
 * logged as a warning: the parts of an uncompleted upload are never visible).
 */
import type { Client } from 'minio';
import { byteChunks, discardBody } from './body.ts';
import type { PutBody, StorageLogger } from './types.ts';

const PARTS_PER_TIER = 1000;
const MAX_PART_SIZE = 4 * 1024 ** 3;

/** The size of part `n` (1-based) for a base part size. */
export function partLength(base: number, n: number): number {
  return Math.min(base * 2 ** Math.floor((n - 1) / PARTS_PER_TIER), MAX_PART_SIZE);
}

export interface UploadTarget {
  client: Client;
  bucket: string;
  key: string;
  partSize: number;
  contentType?: string;
  signal?: AbortSignal;
  logger: StorageLogger;
  /** Runs one storage request with error mapping; `retry` marks it safe to repeat. */
  call<T>(op: string, fn: () => Promise<T>, retry: boolean): Promise<T>;
}

export interface UploadResult {
  size: number;
  etag?: string;
}

export async function streamUpload(t: UploadTarget, body: PutBody): Promise<UploadResult> {
  const { client, bucket, key, partSize, call } = t;
  const headers: Record<string, string> = t.contentType ? { 'Content-Type': t.contentType } : {};
  const buffers: Buffer[] = [Buffer.allocUnsafe(partSize)];
  let current = 0;
  let target = partSize;
  let filled = 0;
  let size = 0;
  let uploadId: string | undefined;
  let partNumber = 0;
  const parts: { part: number; etag: string }[] = [];
  let inflight: Promise<void> | undefined;
  let failure: { err: unknown } | undefined;

  const sendPart = (uploadID: string, payload: Buffer, part: number): Promise<void> =>
    call(
      'put',
      () =>
        client.uploadPart(
          { bucketName: bucket, objectName: key, uploadID, partNumber: part, headers: {} },
          payload,
        ),
      true,
    ).then(
      (res) => void parts.push({ part, etag: res.etag }),
      (err: unknown) => void (failure ??= { err }),
    );

  /** Waits for the part in flight; rethrows its failure. */
  const settle = async (): Promise<void> => {
    if (inflight) await inflight;
    inflight = undefined;
    if (failure) throw failure.err;
  };

  /** Starts uploading the current (full or final) buffer and switches to the other one. */
  const startPart = async (length: number): Promise<void> => {
    const id = (uploadId ??= await call(
      'put',
      () => client.initiateNewMultipartUpload(bucket, key, { ...headers }),
      false,
    ));
    await settle();
    inflight = sendPart(id, buffers[current].subarray(0, length), ++partNumber);
    current ^= 1;
    target = partLength(partSize, partNumber + 1);
    if (!(buffers[current]?.length >= target)) buffers[current] = Buffer.allocUnsafe(target);
    filled = 0;
  };

  try {
    for await (const chunk of byteChunks(body, t.signal)) {
      if (failure) throw failure.err;
      size += chunk.length;
      for (let off = 0; off < chunk.length;) {
        const n = Math.min(chunk.length - off, target - filled);
        buffers[current].set(chunk.subarray(off, off + n), filled);
        filled += n;
        off += n;
        if (filled === target) await startPart(filled);
      }
    }
    t.signal?.throwIfAborted();
    if (uploadId === undefined) {
      const res = await call(
        'put',
        () =>
          client.putObject(bucket, key, buffers[current].subarray(0, filled), filled, {
            ...headers,
          }),
        true,
      );
      return { size, etag: res.etag };
    }
    const id = uploadId;
    if (filled > 0) await startPart(filled);
    await settle();
    t.signal?.throwIfAborted();
    parts.sort((a, b) => a.part - b.part);
    const done = await call(
      'put',
      () => client.completeMultipartUpload(bucket, key, id, parts),
      false,
    );
    return { size, etag: done.etag };
  } catch (err) {
    discardBody(body);
    if (inflight) await inflight;
    if (uploadId !== undefined) await abortUpload(t, uploadId);
    throw err;
  }
}

async function abortUpload(t: UploadTarget, uploadId: string): Promise<void> {
  try {
    await t.client.abortMultipartUpload(t.bucket, t.key, uploadId);
  } catch (err) {
    t.logger.warn(
      { bucket: t.bucket, key: t.key, uploadId, err: (err as Error)?.message ?? String(err) },
      'could not abort multipart upload; its parts stay invisible until the server expires them',
    );
  }
}
