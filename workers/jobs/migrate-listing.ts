/**
 * The listing step of a durable migration (docs/migrations.md): it lists one page of the source
 * after the migration's cursor, cuts it into chunks (MIGRATION_CHUNK_OBJECTS objects or
 * MIGRATION_CHUNK_BYTES of input, whichever comes first), records the rows, the cursor and the
 * next step in one transaction, then queues the chunks and the next step. While
 * MIGRATION_CHUNKS_AHEAD chunks wait, the step waits (delayed, not run), so Redis holds a bounded
 * number of chunks whatever the number of objects.
 */
import { DelayedError, type Job } from 'bullmq';
import type { Knex } from 'knex';
import { tenantStore, type ObjectInfo, type ObjectStore } from '../../shared/storage/index.ts';
import { sourceVersionOf } from '../../shared/queues/index.ts';
import { chunkName, type ListJobData, type MigrationRow } from '../../shared/migrations/index.ts';
import {
  completeIfDone,
  insertListed,
  loadMigration,
  type ListedObject,
} from '../../shared/migrations/ledger.ts';
import {
  enqueueChunks,
  enqueueListing,
  type MigrateQueue,
  type ScheduleOptions,
} from '../../shared/migrations/schedule.ts';

/** Objects listed per step: one S3 page. */
const LIST_PAGE = 1000;

/** What a listing step needs of the migrate processor's dependencies. */
export interface ListingDeps {
  db: Knex;
  objects: ObjectStore;
  queue: MigrateQueue;
  settings: ScheduleOptions & { chunkObjects: number; chunkBytes: number };
  onCompleted(migrationId: string): Promise<void>;
}

/** Puts the job back for later without spending an attempt (BullMQ's own way). */
export async function putBack(job: Job, token: string | undefined, ms: number): Promise<never> {
  await job.moveToDelayed(Date.now() + Math.max(50, Math.ceil(ms)), token);
  throw new DelayedError();
}

/** Builds the listing step's processor. */
export function createListingStep(deps: ListingDeps) {
  const s = deps.settings;

  /** One page of the source after the cursor; `done` when it was the last. */
  async function listPage(
    m: MigrationRow,
    objects: ObjectStore,
  ): Promise<{ infos: ObjectInfo[]; cursor: string | null; done: boolean }> {
    if ('manifest' in m.source) return manifestPage(m, objects, m.source.manifest);
    const infos: ObjectInfo[] = [];
    // Results written under the source prefix are not inputs.
    const own = m.outputPrefix !== '' && m.outputPrefix.startsWith(m.source.prefix);
    let last: string | null = m.listingCursor;
    const opts = m.listingCursor ? { startAfter: m.listingCursor } : {};
    for await (const info of objects.list(m.source.prefix, opts)) {
      last = info.key;
      if (!(own && info.key.startsWith(m.outputPrefix))) infos.push(info);
      if (infos.length >= LIST_PAGE) return { infos, cursor: last, done: false };
    }
    return { infos, cursor: last, done: true };
  }

  /** A manifest lists one key per line; the cursor is the number of lines already taken. */
  async function manifestPage(m: MigrationRow, objects: ObjectStore, key: string) {
    const skip = Number(m.listingCursor ?? '0');
    const infos: ObjectInfo[] = [];
    let line = 0;
    let rest = '';
    const body = await objects.get(key);
    try {
      for await (const chunk of body) {
        const lines = (rest + (chunk as Buffer).toString('utf8')).split('\n');
        rest = lines.pop()!;
        for (const l of lines) {
          if (line++ < skip) continue;
          const k = l.replace(/\r$/, '');
          if (k !== '') infos.push({ key: k, size: 0 });
          if (infos.length >= LIST_PAGE) return { infos, cursor: String(line), done: false };
        }
      }
      if (rest !== '' && line++ >= skip) infos.push({ key: rest.replace(/\r$/, ''), size: 0 });
      return { infos, cursor: String(line), done: true };
    } finally {
      body.destroy();
    }
  }

  /** Cuts listed objects into chunks: at most chunkObjects, at most chunkBytes (at least one object). */
  function cut(
    m: MigrationRow,
    infos: ObjectInfo[],
  ): { objects: ListedObject[]; chunks: string[] } {
    const objects: ListedObject[] = [];
    const chunks: string[] = [];
    let count = 0;
    let bytes = 0;
    for (const info of infos) {
      if (
        chunks.length === 0 ||
        count >= s.chunkObjects ||
        (count > 0 && bytes + info.size > s.chunkBytes)
      ) {
        chunks.push(chunkName(m.id, m.chunksListed + chunks.length));
        count = 0;
        bytes = 0;
      }
      count++;
      bytes += info.size;
      const version = info.etag || info.lastModified ? sourceVersionOf(info) : '';
      objects.push({ key: info.key, size: info.size, version, chunk: chunks[chunks.length - 1] });
    }
    return { objects, chunks };
  }

  async function runListing(job: Job<ListJobData>, token?: string): Promise<unknown> {
    const m = await loadMigration(deps.db, job.data.migrationId);
    if (!m || m.state !== 'running' || m.listingDone || m.listingStep !== job.data.step)
      return { skipped: true };
    const counts = await deps.queue.getJobCounts('waiting', 'delayed', 'prioritized');
    const ahead = (counts.waiting ?? 0) + (counts.delayed ?? 0) + (counts.prioritized ?? 0);
    // Back-pressure: the listing waits while enough chunks wait for the workers.
    if (ahead >= s.chunksAhead) return putBack(job, token, 250 + Math.random() * 250);
    const page = await listPage(m, tenantStore(deps.objects, m.tenantId));
    const { objects, chunks } = cut(m, page.infos);
    const recorded = await insertListed(deps.db, m.id, m.listingStep, {
      objects,
      cursor: page.cursor,
      done: page.done,
      chunks: chunks.length,
    });
    if (!recorded) return { skipped: true };
    await enqueueChunks(deps.queue, m, chunks, s);
    if (!page.done) await enqueueListing(deps.queue, { ...m, listingStep: m.listingStep + 1 }, s);
    else if (await completeIfDone(deps.db, m.id)) await deps.onCompleted(m.id);
    return { listed: objects.length, chunks: chunks.length, done: page.done };
  }

  return runListing;
}
