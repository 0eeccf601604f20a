/**
 * `keyward backup` and `keyward restore`. The backup is fetched from the service as
 * a platform administrator and encrypted here, as it is written, under the operator's passphrase
 * (shared/backup/sealed-file.ts); the file appears under its name only once complete. The restore
 * runs beside a stopped service, straight into the target database.
 */
import { createReadStream } from 'node:fs';
import { Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { ApiError, type KeywardClient } from './client.ts';
import { writeWhole } from './files.ts';
import { BackupFileError, encryptBackup } from '../../shared/backup/sealed-file.ts';

/** What a backup wrote. */
export interface BackupSummary {
  bytes: number;
  plaintextBytes: number;
  seconds: number;
}

/** Passes the snapshot through, failing unless it ends with its `done` line (a cut stream). */
async function* complete(source: AsyncIterable<Buffer>, counter: { bytes: number }) {
  let tail = '';
  for await (const chunk of source) {
    counter.bytes += chunk.length;
    tail = (tail + chunk.toString('latin1')).slice(-200);
    yield chunk;
  }
  const last = tail.trimEnd().split('\n').pop() ?? '';
  if (!last.startsWith('{"kind":"done"'))
    throw new BackupFileError('the service ended the snapshot early; no backup was written');
}

/** Fetches the snapshot and writes it encrypted to `out` (whole or not at all: bin/lib/files.ts). */
export async function downloadBackup(
  client: KeywardClient,
  out: string,
  passphrase: string,
): Promise<BackupSummary> {
  const started = performance.now();
  const res = await client.request(
    'GET',
    '/api/v3/admin/platform/backup',
    undefined,
    'application/x-ndjson',
  );
  if (res.status !== 200 || !res.body)
    throw new ApiError(
      res.status,
      (await res.json().catch(() => ({}))) as Record<string, unknown>,
      'GET /api/v3/admin/platform/backup',
    );
  const counter = { bytes: 0 };
  const body = Readable.fromWeb(res.body as WebReadableStream<Uint8Array>);
  const bytes = await writeWhole(out, encryptBackup(complete(body, counter), passphrase), {
    mode: 0o600,
  });
  return { bytes, plaintextBytes: counter.bytes, seconds: (performance.now() - started) / 1000 };
}

/** The backup file as chunks, from its start (restore reads it twice). */
export const fileSource = (path: string) => (): AsyncIterable<Buffer> =>
  createReadStream(path, { highWaterMark: 256 * 1024 });
