/**
 * What every `keyward migrate` run shares, whatever its source (a folder,
 * bin/lib/migrate-folder.ts; or objects the service holds, bin/lib/migrate.ts): its options and
 * state, retries and polling, downloading a converted file's outputs under --out, and recording
 * each file's outcome in the progress line, the summary and the state file.
 */
import { createHash } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { dirname, join, posix } from 'node:path';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Api } from './api-client.ts';
import { ApiError } from './client.ts';
import { writeWhole } from './files.ts';
import { InOrder } from '../../shared/each-limited.ts';
import { holdHead } from '../../shared/streams.ts';
import { MultipartScanner } from '../../shared/mime/multipart.ts';
import { parseContentType } from '../../shared/mime/header-params.ts';
import type { Progress, Snapshot } from './progress.ts';
import type { FileState, StateWriter, SummaryRow } from './state.ts';

export type Location =
  { kind: 'dir'; path: string } | { kind: 's3'; bucket: string; prefix: string };

export interface MigrateOptions {
  source: Location;
  out: Location;
  concurrency: number;
  metadata: Record<string, unknown>;
  /** Where uploads (`in/`) and results (`out/`) go in the tenant's storage (default: migrate/<hash of the source path>/). */
  remotePrefix?: string;
  pollMs: number;
  /**
   * Delete from the service's storage what this run put there, once downloaded: each upload and
   * the job's results (SignedData content included). Only with a local --out, so nothing is
   * removed that exists nowhere else; an s3:// source is the tenant's own and is never deleted.
   */
  cleanup?: boolean;
  progressIntervalMs?: number;
  stderr: NodeJS.WriteStream;
  stdout: NodeJS.WritableStream;
}

export interface Run {
  api: Api;
  opts: MigrateOptions;
  outDir: string | null;
  writer: StateWriter;
  rows: SummaryRow[];
  live: Map<string, number>;
  snap: Snapshot;
  progress: Progress | null;
  /** --cleanup: uploads of failed files removed from the service's storage, and those that could not be. */
  failedUploads: { removed: number; left: string[] };
}

/**
 * Reads `read()` every `pollMs` until `finished` says so; transient errors (network, 5xx) are
 * waited out. A job and a migration are followed the same way.
 */
export async function follow<T>(
  read: () => Promise<T>,
  finished: (view: T) => boolean,
  pollMs: number,
  onView: (view: T) => void,
): Promise<T> {
  for (;;) {
    try {
      const view = await read();
      onView(view);
      if (finished(view)) return view;
    } catch (err) {
      if (err instanceof ApiError && err.status < 500) throw err;
    }
    await sleep(pollMs);
  }
}

/** Sends a call again after a network error or a 5xx, a few times with backoff. */
export async function retrying<T>(fn: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if ((err instanceof ApiError && err.status < 500) || attempt >= 3) throw err;
      await sleep(500 * 2 ** attempt);
    }
  }
}

/** Deletes an upload from the tenant's storage (one already gone is not an error). */
export async function deleteUpload(api: Api, name: string): Promise<void> {
  try {
    await api.deleteUpload({ name });
  } catch (err) {
    if (!(err instanceof ApiError && err.status === 404)) throw err;
  }
}

/** An output as a report or a job result describes it; the SHA-256 where the service gives one. */
interface Described {
  role: string;
  key: string;
  size: number;
  sha256?: string;
}

/**
 * Writes a download's body into `dest` (whole or not at all: bin/lib/files.ts), refusing bytes
 * that are not the size (and SHA-256) the service described.
 */
async function saveBody(res: Response, dest: string, o: Described): Promise<number> {
  if (!res.body) throw new ApiError(res.status, {}, `download into ${dest}`);
  return writeWhole(dest, checked(Readable.fromWeb(res.body as never), o));
}

/**
 * Where an output of `rel` goes under --out: beside it, named as the service named it. A name
 * that could leave its folder (empty, a dot name, a backslash) is refused.
 */
function placed(outDir: string, rel: string, key: string): { relFile: string; dest: string } {
  const name = posix.basename(key);
  if (name === '' || name === '.' || name === '..' || name.includes('\\'))
    throw new Error(`the service named an output ${JSON.stringify(key)}: not a file name`);
  const relFile = posix.join(posix.dirname(rel), name);
  return { relFile, dest: join(outDir, ...relFile.split('/')) };
}

/**
 * Downloads a converted file's outputs under --out (dir of `rel`), unless the output is s3. A
 * SignedData's signed content comes first, as `<name>.content` beside `<name>.jws.json`, so a
 * result file on disk always has its content next to it. `open` asks the service for one output.
 */
export async function fetchOutputs(
  run: Run,
  rel: string,
  outputs: readonly Described[],
  open: (role: 'result' | 'content') => Promise<Response>,
): Promise<{ file: string | null; size: number }> {
  const result = outputs.find((o) => o.role === 'result');
  if (!run.outDir || !result) return { file: null, size: result?.size ?? 0 };
  const { relFile, dest } = placed(run.outDir, rel, result.key);
  await mkdir(dirname(dest), { recursive: true });
  const content = outputs.find((o) => o.role === 'content');
  if (content)
    await retrying(async () =>
      saveBody(await open('content'), placed(run.outDir!, rel, content.key).dest, content),
    );
  return {
    file: relFile,
    size: await retrying(async () => saveBody(await open('result'), dest, result)),
  };
}

/** What a converted file's outputs are, as the report gives them. */
export interface Outputs {
  rel: string;
  outputs: readonly Described[];
}

/** Converted objects asked for per request of the outputs stream. */
const OUTPUTS_PAGE = 1000;
/**
 * An output part of at most this many bytes is read whole (and checked) and written to disk
 * while the next parts are read, up to WRITES_AT_ONCE at once: a folder of mail is not written at
 * the pace of one file's open, write, close and rename after another.
 */
const HELD_OUTPUT_BYTES = 1024 * 1024;
const WRITES_AT_ONCE = 8;

/** `body` as written, failing (so nothing is kept) unless it is the output described. */
async function* checked(body: AsyncIterable<Buffer>, o: Described) {
  const hash = createHash('sha256');
  let n = 0;
  for await (const chunk of body) {
    n += chunk.length;
    if (n > o.size) break;
    hash.update(chunk);
    yield chunk;
  }
  if (n !== o.size || (o.sha256 !== undefined && hash.digest('hex') !== o.sha256))
    throw new Error(`output ${o.key} differs from what the service recorded of it`);
}

/**
 * Downloads, under --out, the outputs of the converted files of migration `id` in pages of the
 * outputs stream (GET .../outputs: one request per OUTPUTS_PAGE objects, a part per output);
 * answers the source keys whose every output is on disk, with the result's file and size. Each
 * part is checked against the report's size and SHA-256 before its file is renamed into place;
 * small ones are written several at once.
 * It stops at the first failure (noted): what it did not bring is for fetchOutputs, object by
 * object, to bring or to fail with the service's problem.
 */
export async function fetchAllOutputs(
  run: Run,
  id: string,
  wanted: ReadonlyMap<string, Outputs>,
): Promise<Map<string, { file: string; size: number }>> {
  const done = new Map<string, { file: string; size: number }>();
  if (!run.outDir || wanted.size === 0) return done;
  const outDir = run.outDir;
  /** The roles on disk of each source key. */
  const got = new Map<string, Set<string>>();
  /** Outputs being written, as `key\nrole`. */
  const underWay = new Set<string>();
  /** Each content output's write, by source key, for its result to wait on. */
  const contentWritten = new Map<string, Promise<void>>();
  const writes = new InOrder<{ key: string; role: string; relFile: string; size: number }>(
    WRITES_AT_ONCE,
    ({ key, role, relFile, size }) => {
      underWay.delete(`${key}\n${role}`);
      if (role === 'result') contentWritten.delete(key);
      got.set(key, (got.get(key) ?? new Set()).add(role));
      if (role === 'result') done.set(key, { file: relFile, size });
    },
  );
  let after: string | undefined;
  // A page per OUTPUTS_PAGE objects wanted, and one to see the end: an answer that never ends
  // (keys that do not move on) cannot keep the run here.
  for (let pages = Math.ceil(wanted.size / OUTPUTS_PAGE) + 1; pages > 0; pages -= 1) {
    try {
      const res = await retrying(() =>
        run.api.getMigrationOutputs({ id, query: { limit: OUTPUTS_PAGE, after } }),
      );
      const boundary = parseContentType(res.headers.get('content-type') ?? '')?.params.boundary;
      if (!res.body || !boundary) throw new ApiError(res.status, {}, `outputs of ${id}`);
      const it = Readable.fromWeb(res.body as never)[
        Symbol.asyncIterator
      ]() as AsyncIterator<Buffer>;
      const scanner = new MultipartScanner(
        async () => {
          const r = await it.next();
          return r.done ? null : r.value;
        },
        {
          boundary,
          malformed: (why) => new Error(`the outputs answer is malformed: ${why}`),
          maxPreambleBytes: 0,
          maxEpilogueBytes: 1024,
        },
      );
      let rows = 0;
      for (let part = await scanner.next(); part; part = await scanner.next()) {
        const key = decodeURIComponent(part.headers.get('keyward-source-key') ?? '');
        if (key !== after) {
          // Source-key order, as the report's: a key that goes back is no answer of ours.
          if (after !== undefined && !(key > after))
            throw new Error('the outputs answer is not in source-key order');
          rows += 1;
          after = key;
        }
        const w = wanted.get(key);
        const o = w?.outputs.find((x) => x.role === part!.headers.get('keyward-role'));
        if (!w || !o || got.get(key)?.has(o.role) || underWay.has(`${key}\n${o.role}`)) continue;
        const { relFile, dest } = placed(outDir, w.rel, o.key);
        const head = await holdHead(checked(part.body, o), HELD_OUTPUT_BYTES);
        const role = o.role;
        // A result waits for its content's write (sent before it), so a result file on disk
        // always has its content beside it; a content that failed fails its result too.
        const first = role === 'result' ? contentWritten.get(key) : undefined;
        const write = async () => {
          await first;
          await mkdir(dirname(dest), { recursive: true });
          return { key, role, relFile, size: await writeWhole(dest, head.stream) };
        };
        // A larger output is still in the answer: it is written before anything is read on.
        if (!head.whole) await writes.drain();
        underWay.add(`${key}\n${role}`);
        await writes.add(() => {
          const written = write();
          if (role === 'content') {
            const done = written.then(() => undefined);
            // Awaited by its result, if one comes; a failure is reported through `writes`.
            done.catch(() => {});
            contentWritten.set(key, done);
          }
          return written;
        });
        if (!head.whole) await writes.drain();
      }
      await writes.drain();
      // An object whose outputs are all gone from storage sends no part: only an empty page ends.
      if (rows === 0) break;
    } catch (err) {
      await writes.settle();
      run.progress?.note(
        `downloading the outputs of migration ${id} in one stream stopped (${(err as Error).message}); the rest come one by one`,
      );
      break;
    }
  }
  for (const key of done.keys())
    if (got.get(key)?.size !== wanted.get(key)!.outputs.length) done.delete(key);
  return done;
}

/** A file recorded as failed: its problem, in the summary's shape, from an error. */
export function failWith(fs: FileState, err: unknown): void {
  Object.assign(fs, {
    status: 'failed',
    problem: {
      slug: err instanceof ApiError ? err.slug : 'client-error',
      detail: (err as Error).message,
    },
  });
}

/** Records a file's outcome: the counts of the progress line, a row of the summary, the state. */
export function settle(run: Run, rel: string, fs: FileState): void {
  if (fs.status === 'converted') run.snap.filesDone += 1;
  else {
    run.snap.filesFailed += 1;
    run.progress?.note(`failed: ${rel}: ${fs.problem!.slug}: ${fs.problem!.detail}`);
  }
  run.snap.bytesDone += fs.size;
  run.rows.push(rowOf(rel, fs));
}

export function rowOf(rel: string, fs: FileState, skipped = false): SummaryRow {
  return {
    file: rel,
    status: skipped ? 'skipped' : fs.status === 'converted' ? 'converted' : 'failed',
    inputSize: fs.size,
    output: fs.outputFile ?? fs.outputKey ?? null,
    outputSize: fs.outputSize ?? null,
    seconds: skipped ? null : (fs.seconds ?? null),
    problem: fs.status === 'failed' ? (fs.problem ?? null) : null,
  };
}
