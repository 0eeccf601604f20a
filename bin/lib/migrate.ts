/**
 * `keyward migrate <dir | s3://bucket/prefix> --out <dir | s3://bucket/prefix>`.
 *
 * A local directory: the files are uploaded (PUT /uploads, N at a time) under a folder of the
 * run's own, one durable migration converts that folder in chunks, and each result is downloaded
 * into --out by its source key from the migration's report. An s3:// source
 * names objects the service already holds (its own bucket, under the tenant's area): one batch
 * job over the prefix, whose results are then downloaded. An s3:// output leaves the results in
 * storage. The state file in --out lets a second run skip what the first one finished.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, existsSync } from 'node:fs';
import { mkdir, readdir, stat } from 'node:fs/promises';
import { dirname, join, posix, relative, resolve, sep } from 'node:path';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { linesOf } from '../../shared/manifest/verify.ts';
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

/**
 * Reads `read()` every `pollMs` until `finished` says so; transient errors (network, 5xx) are
 * waited out. A job and a migration are followed the same way.
 */
async function follow<T>(
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

/** Deletes an upload from the tenant's storage (one already gone is not an error). */
async function deleteUpload(api: Api, name: string): Promise<void> {
  try {
    await api.deleteUpload({ name });
  } catch (err) {
    if (!(err instanceof ApiError && err.status === 404)) throw err;
  }
}

/** Writes a download's body into `dest` (whole or not at all: bin/lib/files.ts). */
async function saveBody(res: Response, dest: string): Promise<number> {
  if (!res.body) throw new ApiError(res.status, {}, `download into ${dest}`);
  return writeWhole(dest, Readable.fromWeb(res.body as never));
}

/** Where an output of `rel` goes under --out: beside it, named as the service named it. */
function placed(outDir: string, rel: string, key: string): { relFile: string; dest: string } {
  const relFile = posix.join(posix.dirname(rel), posix.basename(key));
  return { relFile, dest: join(outDir, ...relFile.split('/')) };
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
 * Downloads a converted file's outputs under --out (dir of `rel`), unless the output is s3. A
 * SignedData's signed content comes first, as `<name>.content` beside `<name>.jws.json`, so a
 * result file on disk always has its content next to it. `open` asks the service for one output.
 */
async function fetchOutputs(
  run: Run,
  rel: string,
  outputs: readonly { role: string; key: string; size: number }[],
  open: (role: 'result' | 'content') => Promise<Response>,
): Promise<{ file: string | null; size: number }> {
  const result = outputs.find((o) => o.role === 'result');
  if (!run.outDir || !result) return { file: null, size: result?.size ?? 0 };
  const { relFile, dest } = placed(run.outDir, rel, result.key);
  await mkdir(dirname(dest), { recursive: true });
  const content = outputs.find((o) => o.role === 'content');
  if (content)
    await retrying(async () =>
      saveBody(await open('content'), placed(run.outDir!, rel, content.key).dest),
    );
  return { file: relFile, size: await retrying(async () => saveBody(await open('result'), dest)) };
}

/** A file recorded as failed: its problem, in the summary's shape, from an error. */
function failWith(fs: FileState, err: unknown): void {
  Object.assign(fs, {
    status: 'failed',
    problem: {
      slug: err instanceof ApiError ? err.slug : 'client-error',
      detail: (err as Error).message,
    },
  });
}

/** Records a file's outcome: the counts of the progress line, a row of the summary, the state. */
function settle(run: Run, rel: string, fs: FileState): void {
  if (fs.status === 'converted') run.snap.filesDone += 1;
  else {
    run.snap.filesFailed += 1;
    run.progress?.note(`failed: ${rel}: ${fs.problem!.slug}: ${fs.problem!.detail}`);
  }
  run.snap.bytesDone += fs.size;
  run.rows.push(rowOf(rel, fs));
}

/** One line of a migration's report, as far as a folder migration reads it. */
interface ReportLine {
  sourceKey: string;
  outcome: 'converted' | 'refused' | 'pending';
  problem: string | null;
  detail: string | null;
  outputs: { role: 'result' | 'content'; key: string; size: number }[];
  startedAt: string | null;
  finishedAt: string | null;
}

/** A migration's report, line by line (JSON Lines, streamed). */
async function* reportOf(api: Api, id: string): AsyncGenerator<ReportLine> {
  const res = await api.getMigrationReport({ id, query: { format: 'jsonl' } });
  if (!res.body) throw new ApiError(res.status, {}, `report of ${id}`);
  for await (const line of linesOf(Readable.fromWeb(res.body as never)))
    yield JSON.parse(line) as ReportLine;
}

/** A file of the folder still to convert, with its size and mtime as the walk found them. */
interface Found {
  rel: string;
  st: { size: number; mtimeMs: number };
}

/** A file of the folder that a migration converts: where it is, what is known of it. */
interface Uploaded {
  rel: string;
  fs: FileState;
}

/**
 * Follows the migration over this run's uploads to its end, then reads its report: each
 * converted file's outputs are downloaded under --out, each refused file keeps the problem the
 * service gave. With --cleanup, what the run put in the service's storage goes once every
 * result is on disk: the migration's outputs in one call, each upload (converted or not: the
 * file is still on disk) after.
 */
async function finishMigration(run: Run, id: string, files: Map<string, Uploaded>): Promise<void> {
  const { api, opts, writer } = run;
  const all = [...files.values()];
  const before = { done: run.snap.filesDone, failed: run.snap.filesFailed };
  await follow(
    () => api.getMigration({ id }),
    (m) => m.state === 'completed' || m.state === 'cancelled',
    opts.pollMs,
    (m) => {
      run.snap.filesDone = before.done + m.counts.converted;
      run.snap.filesFailed = before.failed + m.counts.refused;
      run.live.set(id, m.counts.bytesRead);
    },
  );
  run.live.delete(id);
  Object.assign(run.snap, { filesDone: before.done, filesFailed: before.failed });
  const lines: ReportLine[] = [];
  for await (const line of reportOf(api, id)) if (files.has(line.sourceKey)) lines.push(line);
  let kept = 0;
  await pool(lines, opts.concurrency, async (line) => {
    const { rel, fs } = files.get(line.sourceKey)!;
    files.delete(line.sourceKey);
    const seconds =
      line.startedAt && line.finishedAt
        ? (Date.parse(line.finishedAt) - Date.parse(line.startedAt)) / 1000
        : undefined;
    if (line.outcome === 'converted') {
      const result = line.outputs.find((o) => o.role === 'result')!;
      try {
        const got = await fetchOutputs(run, rel, line.outputs, (role) =>
          api.getMigrationOutput({ id, query: { object: line.sourceKey, role } }),
        );
        Object.assign(fs, {
          status: 'converted',
          outputKey: result.key,
          outputFile: got.file ?? undefined,
          outputSize: got.size,
          problem: undefined,
          seconds,
        });
      } catch (err) {
        failWith(fs, err);
        kept += 1;
      }
    } else
      Object.assign(fs, {
        status: 'failed',
        problem: {
          slug: line.problem ?? 'not-converted',
          detail: line.detail ?? 'the migration ended before converting it',
        },
        seconds,
      });
    settle(run, rel, fs);
  });
  // Uploaded, yet not in the report: the migration did not list it (removed meanwhile).
  for (const { rel, fs } of files.values()) {
    Object.assign(fs, {
      status: 'failed',
      problem: { slug: 'not-converted', detail: 'the migration did not find the upload' },
    });
    settle(run, rel, fs);
  }
  delete writer.state.migration;
  await writer.save();
  if (!(opts.cleanup && run.outDir)) return;
  if (kept > 0)
    run.progress?.note(
      `cleanup: the outputs of migration ${id} stay in the service storage: ${kept} could not be downloaded`,
    );
  else
    try {
      await retrying(() => api.deleteMigrationOutputs({ id }));
    } catch (err) {
      run.progress?.note(`cleanup of migration ${id}'s outputs failed: ${(err as Error).message}`);
    }
  await pool(all, opts.concurrency, async ({ fs }) => {
    const key = fs.remoteKey;
    if (!key) return;
    try {
      await retrying(() => deleteUpload(api, key));
      fs.remoteKey = undefined;
      if (fs.status === 'failed') run.failedUploads.removed += 1;
    } catch (err) {
      if (fs.status === 'failed') run.failedUploads.left.push(key);
      run.progress?.note(`cleanup of ${key} failed: ${(err as Error).message}`);
    }
  });
  await writer.save();
}

/** Uploads each file to be converted under the run's folder; a failed upload is the file's outcome. */
async function uploadAll(
  run: Run,
  srcDir: string,
  todo: Found[],
  folder: string,
): Promise<Map<string, Uploaded>> {
  const { api, opts, writer } = run;
  const files = new Map<string, Uploaded>();
  await pool(todo, opts.concurrency, async ({ rel, st }) => {
    const file = join(srcDir, ...rel.split('/'));
    const fs: FileState = { size: st.size, mtimeMs: st.mtimeMs, status: 'uploaded' };
    writer.state.files[rel] = fs;
    try {
      const up = await retrying(() =>
        api.uploadObject({
          name: `${folder}${rel}`,
          body: { open: () => createReadStream(file), length: st.size },
        }),
      );
      fs.remoteKey = up.key;
      files.set(up.key, { rel, fs });
    } catch (err) {
      failWith(fs, err);
      settle(run, rel, fs);
    }
  });
  return files;
}

/**
 * A local directory: what is to do is uploaded under a folder of this run's own, then converted
 * by one durable migration over that folder (chunks of objects per queue job, a ledger row per
 * object), whose report says what became of each file. An interrupted run's migration goes on
 * in the service; the next run follows it to its end first and converts only what is left.
 */
async function migrateDir(run: Run, srcDir: string): Promise<void> {
  const { api, opts, writer } = run;
  const base =
    opts.remotePrefix ??
    `migrate/${createHash('sha256').update(srcDir).digest('hex').slice(0, 12)}/`;
  const outPrefix = opts.out.kind === 's3' ? opts.out.prefix : `${base}out/`;
  let todo: Found[] = [];
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
    } else todo.push({ rel, st });
  }
  run.snap.filesTotal = todo.length + (run.snap.filesSkipped ?? 0);
  const earlier = writer.state.migration;
  if (earlier) {
    // The migration an interrupted run started: its unchanged files are taken from its report.
    const files = new Map<string, Uploaded>();
    for (const { rel, st } of todo) {
      const fs = writer.state.files[rel];
      if (
        fs?.status === 'submitted' &&
        fs.remoteKey &&
        fs.size === st.size &&
        fs.mtimeMs === st.mtimeMs
      )
        files.set(fs.remoteKey, { rel, fs });
    }
    const taken = new Set([...files.values()].map((f) => f.rel));
    try {
      await finishMigration(run, earlier, files);
      todo = todo.filter(({ rel }) => !taken.has(rel));
    } catch (err) {
      if (!(err instanceof ApiError && err.status === 404)) throw err;
      delete writer.state.migration;
    }
  }
  if (todo.length === 0) return;
  const folder = `${base}in/${new Date().toISOString().replace(/[-:.]/g, '')}-${randomBytes(3).toString('hex')}/`;
  const files = await uploadAll(run, srcDir, todo, folder);
  if (files.size === 0) return;
  const m = await retrying(() =>
    api.createMigration({
      body: { source: { prefix: folder }, output: { prefix: outPrefix }, metadata: opts.metadata },
    }),
  );
  writer.state.migration = m.id;
  for (const { fs } of files.values()) fs.status = 'submitted';
  await writer.save();
  await finishMigration(run, m.id, files);
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
  await follow(
    () => api.getJob({ id: batch.id }),
    (v) => FINISHED.has(v.state),
    opts.pollMs,
    (v) =>
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
        const got = await fetchOutputs(run, rel, child.result?.objects ?? [], (object) =>
          run.api.getJobResult({ id: child.id, query: object === 'result' ? {} : { object } }),
        );
        Object.assign(fs, { outputFile: got.file ?? undefined, outputSize: got.size });
      } catch (err) {
        failWith(fs, err);
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
      `interrupted: what was already submitted (a migration, or jobs) keeps running in the service; run the same command again to resume (state in ${outDir ? join(outDir, STATE_FILE) : 'memory only'})\n`,
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
