/**
 * `keyward migrate <dir | s3://bucket/prefix> --out <dir | s3://bucket/prefix>`.
 *
 * A local directory goes through one durable migration (bin/lib/migrate-folder.ts). An s3://
 * source names objects the service already holds (its own bucket, under the tenant's area): one
 * batch job over the prefix, whose results are then downloaded. An s3:// output leaves the
 * results in storage. The state file in --out lets a second run skip what the first one finished.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { createApi, type Answer, type Item } from './api-client.ts';
import type { KeywardClient } from './client.ts';
import { migrateDir } from './migrate-folder.ts';
import {
  failWith,
  fetchOutputs,
  follow,
  retrying,
  rowOf,
  type Location,
  type MigrateOptions,
  type Run,
} from './migrate-run.ts';
import { eachLimited } from '../../shared/each-limited.ts';
import { Progress } from './progress.ts';
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
} from './state.ts';

/** A conversion job (one file): what a file's job and each child of a batch are. */
type JobView = Item<'listJobChildren'>;

const FINISHED = new Set(['completed', 'failed', 'cancelled']);

/** Parses `s3://bucket/prefix` or a directory path. */
export function parseLocation(text: string): Location {
  const m = /^s3:\/\/([^/]+)\/?(.*)$/.exec(text);
  return m ? { kind: 's3', bucket: m[1], prefix: m[2] } : { kind: 'dir', path: resolve(text) };
}

/** A job's problem (RFC 7807: the slug is the last segment of `type`) in the summary's own shape. */
const problemOf = (v: JobView) => ({
  slug: v.problem?.type.slice(v.problem.type.lastIndexOf('/') + 1) ?? v.state,
  detail: v.problem?.detail ?? `the job ended ${v.state}`,
});

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
  await eachLimited(children, opts.concurrency, async (child) => {
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
