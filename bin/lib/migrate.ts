/**
 * `keyward migrate <dir | s3://bucket/prefix> --out <dir | s3://bucket/prefix>`.
 *
 * A local directory: each file is uploaded (PUT /uploads), submitted as its own job, followed
 * until it finishes and its result downloaded into --out, N files at a time. An s3:// source
 * names objects the service already holds (its own bucket, under the tenant's area): one batch
 * job over the prefix, whose results are then downloaded. An s3:// output leaves the results in
 * storage. The state file in --out lets a second run skip what the first one finished.
 */
import { createHash } from 'node:crypto';
import { createReadStream, existsSync } from 'node:fs';
import { mkdir, readdir, stat } from 'node:fs/promises';
import { dirname, join, posix, relative, resolve, sep } from 'node:path';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { createApi, type Answer, type Api, type Item } from './api-client.ts';
import { ApiError, type KeywardClient } from './client.ts';
import { PARTIAL_SUFFIX, writeWhole } from './files.ts';
import { Progress, type Snapshot } from './progress.ts';
import {
  STATE_FILE,
  SUMMARY_JSON,
  SUMMARY_TEXT,
  StateWriter,
  loadState,
  summaryTable,
  writeSummary,
  type FileState,
  type Summary,
  type SummaryRow,
} from './state.ts';

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

/** A job as getJob answers it: a conversion, or a batch over a prefix. */
type Job = Answer<'getJob'>;
/** A conversion job (one file): what a file's job and each child of a batch are. */
type JobView = Item<'listJobChildren'>;

const FINISHED = new Set(['completed', 'failed', 'cancelled']);
const OWN_FILES = new Set([STATE_FILE, `${STATE_FILE}.tmp`, SUMMARY_JSON, SUMMARY_TEXT]);

/** Parses `s3://bucket/prefix` or a directory path. */
export function parseLocation(text: string): Location {
  const m = /^s3:\/\/([^/]+)\/?(.*)$/.exec(text);
  return m ? { kind: 's3', bucket: m[1], prefix: m[2] } : { kind: 'dir', path: resolve(text) };
}

const toPosix = (p: string) => p.split(sep).join('/');
/** A job's problem (RFC 7807: the slug is the last segment of `type`) in the summary's own shape. */
const problemOf = (v: JobView) => ({
  slug: v.problem?.type.slice(v.problem.type.lastIndexOf('/') + 1) ?? v.state,
  detail: v.problem?.detail ?? `the job ended ${v.state}`,
});

/** Every regular file under `dir`, relative and sorted, leaving out `skip` and the CLI's own files. */
async function walk(dir: string, skip: string | null): Promise<string[]> {
  const out: string[] = [];
  async function visit(d: string): Promise<void> {
    for (const e of await readdir(d, { withFileTypes: true })) {
      const full = join(d, e.name);
      if (skip && (full === skip || full.startsWith(skip + sep))) continue;
      if (e.isDirectory()) await visit(full);
      else if (e.isFile() && !OWN_FILES.has(e.name) && !e.name.endsWith(PARTIAL_SUFFIX))
        out.push(toPosix(relative(dir, full)));
    }
  }
  await visit(dir);
  return out.sort();
}

/** Runs `fn` over items, `n` at a time. */
async function pool<T>(items: T[], n: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(n, items.length) }, async () => {
      while (next < items.length) await fn(items[next++]);
    }),
  );
}

/** Polls a job until it finishes; transient errors (network, 5xx) are waited out. */
async function follow(
  api: Api,
  id: string,
  pollMs: number,
  onView: (v: Job) => void,
): Promise<Job> {
  for (;;) {
    try {
      const v = await api.getJob({ id });
      onView(v);
      if (FINISHED.has(v.state)) return v;
    } catch (err) {
      if (err instanceof ApiError && err.status < 500) throw err;
    }
    await sleep(pollMs);
  }
}

/** Sends a call again after a network error or a 5xx, a few times with backoff. */
async function retrying<T>(fn: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if ((err instanceof ApiError && err.status < 500) || attempt >= 3) throw err;
      await sleep(500 * 2 ** attempt);
    }
  }
}

/** A file's job is a conversion: submitted with a source key, never a prefix. */
function conversion(v: Job): JobView {
  if (v.type !== 'convert') throw new TypeError(`job ${v.id} is a ${v.type} job, not a conversion`);
  return v;
}

/** Deletes an upload from the tenant's storage (one already gone is not an error). */
async function deleteUpload(api: Api, name: string): Promise<void> {
  try {
    await api.deleteUpload({ name });
  } catch (err) {
    if (!(err instanceof ApiError && err.status === 404)) throw err;
  }
}

/** Downloads a job's result into `dest` (whole or not at all: bin/lib/files.ts). */
async function download(
  api: Api,
  id: string,
  dest: string,
  object: 'result' | 'content' = 'result',
): Promise<number> {
  const res = await api.getJobResult({ id, query: object === 'result' ? {} : { object } });
  if (!res.body) throw new ApiError(res.status, {}, `download of ${id}`);
  return writeWhole(dest, Readable.fromWeb(res.body as never));
}

interface Run {
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
 * Downloads a completed job's result under --out (dir of `rel`), unless the output is s3. A
 * SignedData's signed content comes first, as `<name>.content` beside `<name>.jws.json`, so a
 * result file on disk always has its content next to it.
 */
async function fetchResult(
  run: Run,
  id: string,
  rel: string,
  view: JobView,
): Promise<{ file: string | null; size: number }> {
  if (!run.outDir || !view.result) return { file: null, size: view.result?.size ?? 0 };
  const place = (key: string) => {
    const relFile = posix.join(posix.dirname(rel), posix.basename(key));
    return { relFile, dest: join(run.outDir!, ...relFile.split('/')) };
  };
  const { relFile, dest } = place(view.result.key);
  await mkdir(dirname(dest), { recursive: true });
  const content = view.result.objects?.find((o) => o.role === 'content');
  if (content) await retrying(() => download(run.api, id, place(content.key).dest, 'content'));
  const size = await retrying(() => download(run.api, id, dest));
  return { file: relFile, size };
}

/**
 * --cleanup: the job's results (all its objects) and the upload go from the service's storage.
 * A failure here does not fail the file: it converted and is on disk; the service's retention
 * (MIGRATION_OBJECT_RETENTION) or a later DELETE removes what is left.
 */
async function cleanup(run: Run, jobId: string, uploadKey: string | undefined): Promise<void> {
  try {
    await retrying(() => run.api.deleteJobResults({ id: jobId }));
    if (uploadKey) await retrying(() => deleteUpload(run.api, uploadKey));
  } catch (err) {
    run.progress?.note(`cleanup of ${uploadKey ?? jobId} failed: ${(err as Error).message}`);
  }
}

/** One local file: upload, submit, follow, download; records the outcome. */
async function migrateFile(
  run: Run,
  srcDir: string,
  rel: string,
  remoteBase: string,
  outPrefix: string,
): Promise<void> {
  const { api, opts, writer } = run;
  const file = join(srcDir, ...rel.split('/'));
  const st = await stat(file);
  const started = Date.now();
  let fs: FileState = writer.state.files[rel];
  if (!fs || fs.size !== st.size || fs.mtimeMs !== st.mtimeMs || fs.status === 'failed')
    fs = { size: st.size, mtimeMs: st.mtimeMs, status: 'uploaded' };
  writer.state.files[rel] = fs;
  try {
    let view: JobView | null = null;
    if (fs.status === 'submitted' && fs.jobId) {
      // Submitted by an earlier run: follow that job instead of uploading again.
      try {
        view = conversion(
          await follow(api, fs.jobId, opts.pollMs, (v) => run.live.set(rel, v.progress.bytesRead)),
        );
      } catch (err) {
        if (!(err instanceof ApiError && err.status === 404)) throw err;
      }
    }
    if (!view) {
      const up = await retrying(() =>
        api.uploadObject({
          name: `${remoteBase}${rel}`,
          body: { open: () => createReadStream(file), length: st.size },
        }),
      );
      fs.remoteKey = up.key;
      const dir = posix.dirname(rel);
      const job = await retrying(() =>
        api.submitJob({
          body: {
            source: { key: up.key },
            metadata: opts.metadata,
            output: { prefix: `${outPrefix}${dir === '.' ? '' : `${dir}/`}` },
          },
        }),
      );
      Object.assign(fs, { status: 'submitted', jobId: job.id });
      await writer.save();
      view = conversion(
        await follow(api, job.id, opts.pollMs, (v) => run.live.set(rel, v.progress.bytesRead)),
      );
    }
    if (view.state !== 'completed') {
      Object.assign(fs, { status: 'failed', problem: problemOf(view) });
    } else {
      const got = await fetchResult(run, view.id, rel, view);
      Object.assign(fs, {
        status: 'converted',
        outputKey: view.result!.key,
        outputFile: got.file ?? undefined,
        outputSize: got.size,
        problem: undefined,
      });
      if (opts.cleanup && run.outDir && got.file) await cleanup(run, view.id, fs.remoteKey);
    }
  } catch (err) {
    Object.assign(fs, {
      status: 'failed',
      problem: {
        slug: err instanceof ApiError ? err.slug : 'client-error',
        detail: (err as Error).message,
      },
    });
  }
  // --cleanup leaves nothing of the run in the service's storage, failed files included: their
  // source is still on disk and a re-run uploads it again.
  const upload = fs.remoteKey;
  if (opts.cleanup && run.outDir && fs.status === 'failed' && upload) {
    try {
      await retrying(() => deleteUpload(api, upload));
      run.failedUploads.removed += 1;
      fs.remoteKey = undefined;
    } catch (err) {
      run.failedUploads.left.push(upload);
      run.progress?.note(`cleanup of ${upload} failed: ${(err as Error).message}`);
    }
  }
  fs.seconds = (Date.now() - started) / 1000;
  run.live.delete(rel);
  if (fs.status === 'converted') {
    run.snap.filesDone += 1;
    run.snap.bytesDone += st.size;
  } else {
    run.snap.filesFailed += 1;
    run.snap.bytesDone += st.size;
    run.progress?.note(`failed: ${rel}: ${fs.problem!.slug}: ${fs.problem!.detail}`);
  }
  run.rows.push(rowOf(rel, fs));
  await writer.save();
}

function rowOf(rel: string, fs: FileState, skipped = false): SummaryRow {
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

async function migrateDir(run: Run, srcDir: string): Promise<void> {
  const { opts, writer } = run;
  const base =
    opts.remotePrefix ??
    `migrate/${createHash('sha256').update(srcDir).digest('hex').slice(0, 12)}/`;
  const remoteBase = `${base}in/`;
  const outPrefix = opts.out.kind === 's3' ? opts.out.prefix : `${base}out/`;
  const todo: string[] = [];
  for (const rel of await walk(srcDir, run.outDir)) {
    const st = await stat(join(srcDir, ...rel.split('/')));
    const fs = writer.state.files[rel];
    const unchanged = fs && fs.size === st.size && fs.mtimeMs === st.mtimeMs;
    const present =
      !run.outDir ||
      (fs?.outputFile !== undefined && existsSync(join(run.outDir, ...fs.outputFile.split('/'))));
    run.snap.bytesTotal += st.size;
    if (unchanged && fs.status === 'converted' && present) {
      run.rows.push(rowOf(rel, fs, true));
      // A resumed run counts over the whole set: what an earlier run finished is done already.
      run.snap.filesSkipped = (run.snap.filesSkipped ?? 0) + 1;
      run.snap.bytesSkipped = (run.snap.bytesSkipped ?? 0) + st.size;
      run.snap.bytesDone += st.size;
    } else todo.push(rel);
  }
  run.snap.filesTotal = todo.length + (run.snap.filesSkipped ?? 0);
  await pool(todo, opts.concurrency, (rel) => migrateFile(run, srcDir, rel, remoteBase, outPrefix));
}

async function migrateBatch(run: Run, source: Extract<Location, { kind: 's3' }>): Promise<void> {
  const { api, opts, writer } = run;
  const outPrefix =
    opts.out.kind === 's3'
      ? opts.out.prefix
      : `migrate/${createHash('sha256').update(`${source.bucket}/${source.prefix}`).digest('hex').slice(0, 12)}/out/`;
  const batch = await retrying(() =>
    api.submitJob({
      body: {
        source: { bucket: source.bucket, prefix: source.prefix },
        metadata: opts.metadata,
        output: { prefix: outPrefix },
      },
    }),
  );
  writer.state.batchId = batch.id;
  await writer.save();
  run.snap.filesTotal = batch.progress.objectsTotal;
  await follow(api, batch.id, opts.pollMs, (v) =>
    Object.assign(run.snap, {
      filesDone: v.progress.objectsDone,
      filesFailed: v.progress.objectsFailed,
      bytesDone: v.progress.bytesRead,
    }),
  );
  const children: JobView[] = [];
  for (let cursor: string | null = ''; cursor !== null;) {
    const page: Answer<'listJobChildren'> = await retrying(() =>
      api.listJobChildren({ id: batch.id, query: { limit: 500, cursor: cursor || undefined } }),
    );
    children.push(...page.items);
    cursor = page.nextCursor;
  }
  const folder = source.prefix.slice(0, source.prefix.lastIndexOf('/') + 1);
  await pool(children, opts.concurrency, async (child) => {
    const rel = child.source.key.slice(folder.length);
    const prev = writer.state.files[rel];
    const fs: FileState = {
      size: child.progress.bytesRead,
      mtimeMs: 0,
      status: child.state === 'completed' ? 'converted' : 'failed',
      jobId: child.id,
      outputKey: child.result?.key,
    };
    if (child.state !== 'completed') fs.problem = problemOf(child);
    const skipped =
      prev?.status === 'converted' &&
      prev.jobId === child.id &&
      (!run.outDir ||
        (prev.outputFile !== undefined &&
          existsSync(join(run.outDir, ...prev.outputFile.split('/')))));
    if (skipped) return void run.rows.push(rowOf(rel, prev, true));
    if (child.state === 'completed') {
      try {
        const got = await fetchResult(run, child.id, rel, child);
        Object.assign(fs, { outputFile: got.file ?? undefined, outputSize: got.size });
      } catch (err) {
        Object.assign(fs, {
          status: 'failed',
          problem: {
            slug: err instanceof ApiError ? err.slug : 'client-error',
            detail: (err as Error).message,
          },
        });
      }
    }
    writer.state.files[rel] = fs;
    run.rows.push(rowOf(rel, fs));
    await writer.save();
  });
}

/** What --cleanup did with the uploads of failed files, said at the end of the run. */
function cleanupLine(run: Run, source: string): string {
  if (!run.outDir || run.opts.source.kind !== 'dir')
    return 'cleanup: nothing removed (an s3:// source or output stays in the service storage)\n';
  const { removed, left } = run.failedUploads;
  const parts = [
    `cleanup: converted files' uploads and results removed from the service storage`,
    removed
      ? `; the uploads of ${removed} failed file(s) removed too (the files are still in ${source})`
      : '',
    left.length ? `; ${left.length} upload(s) could not be removed: ${left.join(', ')}` : '',
  ];
  return `${parts.join('')}\n`;
}

/** Runs a migration; answers the exit code (0 all converted, 1 some failed). */
export async function migrate(client: KeywardClient, opts: MigrateOptions): Promise<number> {
  const startedAt = new Date();
  const outDir = opts.out.kind === 'dir' ? opts.out.path : null;
  if (outDir) await mkdir(outDir, { recursive: true });
  const sourceText =
    opts.source.kind === 'dir'
      ? opts.source.path
      : `s3://${opts.source.bucket}/${opts.source.prefix}`;
  const writer = new StateWriter(outDir, loadState(outDir, client.url, sourceText));
  const run: Run = {
    api: createApi(client),
    opts,
    outDir,
    writer,
    rows: [],
    live: new Map(),
    snap: { filesDone: 0, filesFailed: 0, filesTotal: 0, bytesDone: 0, bytesTotal: 0 },
    progress: null,
    failedUploads: { removed: 0, left: [] },
  };
  run.progress = new Progress(
    opts.stderr,
    () => {
      let inflight = 0;
      for (const n of run.live.values()) inflight += n;
      return { ...run.snap, bytesDone: run.snap.bytesDone + inflight };
    },
    { intervalMs: opts.progressIntervalMs },
  );
  const onSigint = () => {
    run.progress?.stop();
    opts.stderr.write(
      `interrupted: jobs already submitted keep running on the service; run the same command again to resume (state in ${outDir ? join(outDir, STATE_FILE) : 'memory only'})\n`,
    );
    void writer.save().finally(() => process.exit(130));
  };
  process.once('SIGINT', onSigint);
  try {
    if (opts.source.kind === 'dir') await migrateDir(run, opts.source.path);
    else await migrateBatch(run, opts.source);
  } finally {
    process.off('SIGINT', onSigint);
    run.progress.stop();
  }
  await writer.save();
  const finishedAt = new Date();
  const rows = run.rows.sort((a, b) => (a.file < b.file ? -1 : 1));
  const summary: Summary = {
    source: sourceText,
    out: opts.out.kind === 'dir' ? opts.out.path : `s3://${opts.out.bucket}/${opts.out.prefix}`,
    url: client.url,
    startedAt: startedAt.toISOString(),
    finishedAt: finishedAt.toISOString(),
    seconds: (finishedAt.getTime() - startedAt.getTime()) / 1000,
    files: rows.length,
    converted: rows.filter((r) => r.status === 'converted').length,
    failed: rows.filter((r) => r.status === 'failed').length,
    skipped: rows.filter((r) => r.status === 'skipped').length,
    bytesIn: rows.filter((r) => r.status !== 'skipped').reduce((a, r) => a + r.inputSize, 0),
    bytesOut: rows
      .filter((r) => r.status !== 'skipped')
      .reduce((a, r) => a + (r.outputSize ?? 0), 0),
    rows,
  };
  if (outDir) await writeSummary(outDir, summary);
  opts.stdout.write(summaryTable(summary, 50));
  if (outDir)
    opts.stdout.write(`summary: ${join(outDir, SUMMARY_JSON)} and ${join(outDir, SUMMARY_TEXT)}\n`);
  if (opts.cleanup) opts.stdout.write(cleanupLine(run, sourceText));
  return summary.failed > 0 ? 1 : 0;
}
