/**
 * `keyward migrate <dir>`: the files are uploaded (POST /uploads, many per request) under a folder of
 * the run's own, one durable migration converts that folder in chunks, and each result is
 * downloaded into --out by its source key from the migration's report. An interrupted run's
 * migration goes on in the service; the next run follows it to its end first.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, existsSync, openAsBlob } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import { Readable } from 'node:stream';
import { linesOf } from '../../shared/manifest/verify.ts';
import type { Api } from './api-client.ts';
import { ApiError } from './client.ts';
import { PARTIAL_SUFFIX } from './files.ts';
import {
  deleteUpload,
  failWith,
  fetchAllOutputs,
  fetchOutputs,
  follow,
  retrying,
  rowOf,
  settle,
  type Outputs,
  type Run,
} from './migrate-run.ts';
import { eachLimited } from '../../shared/each-limited.ts';
import { STATE_FILE, SUMMARY_JSON, SUMMARY_TEXT, type FileState } from './state.ts';

const OWN_FILES = new Set([STATE_FILE, `${STATE_FILE}.tmp`, SUMMARY_JSON, SUMMARY_TEXT]);

const toPosix = (p: string) => p.split(sep).join('/');

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

/** One line of a migration's report, as far as a folder migration reads it. */
interface ReportLine {
  sourceKey: string;
  outcome: 'converted' | 'refused' | 'pending';
  problem: string | null;
  detail: string | null;
  outputs: { role: 'result' | 'content'; key: string; size: number; sha256: string }[];
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
 * result is on disk: the migration's outputs in one call, the uploads it converted in another,
 * and each other upload (refused: the file is still on disk) after.
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
  const converted = new Map<string, Outputs>();
  for (const line of lines)
    if (line.outcome === 'converted')
      converted.set(line.sourceKey, { rel: files.get(line.sourceKey)!.rel, outputs: line.outputs });
  const streamed = await fetchAllOutputs(run, id, converted);
  await eachLimited(lines, opts.concurrency, async (line) => {
    const { rel, fs } = files.get(line.sourceKey)!;
    files.delete(line.sourceKey);
    const seconds =
      line.startedAt && line.finishedAt
        ? (Date.parse(line.finishedAt) - Date.parse(line.startedAt)) / 1000
        : undefined;
    if (line.outcome === 'converted') {
      const result = line.outputs.find((o) => o.role === 'result')!;
      try {
        const got =
          streamed.get(line.sourceKey) ??
          (await fetchOutputs(run, rel, line.outputs, (role) =>
            api.getMigrationOutput({ id, query: { object: line.sourceKey, role } }),
          ));
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
  // The uploads the migration converted go in one call, which also keeps any that changed since
  // the migration read it (not this run's to delete); the others (refused) one by one.
  try {
    await retrying(() => api.deleteMigrationInputs({ id }));
    for (const { fs } of all) if (fs.status === 'converted') fs.remoteKey = undefined;
  } catch (err) {
    run.progress?.note(`cleanup of migration ${id}'s inputs failed: ${(err as Error).message}`);
  }
  await eachLimited(all, opts.concurrency, async ({ fs }) => {
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

/** Files per request of the many-files upload, and the most bytes one carries. */
const UPLOAD_BATCH_FILES = 1000;
const UPLOAD_BATCH_BYTES = 64 * 1024 * 1024;
/** Many-files uploads in flight at once. */
const UPLOAD_BATCH_LANES = 2;

/** `todo` in runs of at most UPLOAD_BATCH_FILES files and UPLOAD_BATCH_BYTES bytes (a larger file alone). */
function batchesOf(todo: Found[]): Found[][] {
  const out: Found[][] = [];
  let batch: Found[] = [];
  let bytes = 0;
  for (const f of todo) {
    if (
      batch.length &&
      (batch.length === UPLOAD_BATCH_FILES || bytes + f.st.size > UPLOAD_BATCH_BYTES)
    ) {
      out.push(batch);
      batch = [];
      bytes = 0;
    }
    batch.push(f);
    bytes += f.st.size;
  }
  if (batch.length) out.push(batch);
  return out;
}

/**
 * Uploads each file to be converted under the run's folder: many in a request (POST /uploads, a
 * key field then the file, streamed from disk), and a batch the service refused or lost file by
 * file, so a file that fails does so with its own problem; a failed upload is the file's outcome.
 */
async function uploadAll(
  run: Run,
  srcDir: string,
  todo: Found[],
  folder: string,
): Promise<Map<string, Uploaded>> {
  const { api, opts, writer } = run;
  const files = new Map<string, Uploaded>();
  const pathOf = (rel: string) => join(srcDir, ...rel.split('/'));
  const stateOf = (rel: string, st: Found['st']) => {
    const fs: FileState = { size: st.size, mtimeMs: st.mtimeMs, status: 'uploaded' };
    writer.state.files[rel] = fs;
    return fs;
  };
  const one = async ({ rel, st }: Found) => {
    const fs = stateOf(rel, st);
    try {
      const up = await retrying(() =>
        api.uploadObject({
          name: `${folder}${rel}`,
          body: { open: () => createReadStream(pathOf(rel)), length: st.size },
        }),
      );
      fs.remoteKey = up.key;
      files.set(up.key, { rel, fs });
    } catch (err) {
      failWith(fs, err);
      settle(run, rel, fs);
    }
  };
  await eachLimited(batchesOf(todo), UPLOAD_BATCH_LANES, async (batch) => {
    if (batch.length === 1) return one(batch[0]);
    let stored: { key: string; size: number }[];
    try {
      const form = new FormData();
      for (const { rel } of batch) {
        form.append('key', `${folder}${rel}`);
        form.append('file', await openAsBlob(pathOf(rel)), rel);
      }
      stored = (await retrying(() => api.uploadObjects({ body: form }))).objects;
      // Taken only as an answer to exactly this batch: each file under its own key, whole.
      const mismatch = batch.findIndex(
        ({ rel, st }, i) => stored[i]?.key !== `${folder}${rel}` || stored[i].size !== st.size,
      );
      if (stored.length !== batch.length || mismatch >= 0)
        throw new Error(`the service's answer does not match the ${batch.length} files sent`);
    } catch (err) {
      run.progress?.note(
        `uploading ${batch.length} files in one request failed (${(err as Error).message}); they go one by one`,
      );
      return eachLimited(batch, opts.concurrency, one);
    }
    for (const [i, { rel, st }] of batch.entries()) {
      const fs = stateOf(rel, st);
      fs.remoteKey = stored[i].key;
      files.set(stored[i].key, { rel, fs });
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
export async function migrateDir(run: Run, srcDir: string): Promise<void> {
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
