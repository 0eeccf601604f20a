/**
 * What keeps a durable migration moving whatever was lost (docs/migrations.md, "After a crash"):
 * the ledger is the truth and Redis only holds what is in flight, so the listing step a running
 * migration is at and every chunk with an unfinished object nobody leases are put (back) in the
 * queue under ids derived from the ledger. BullMQ ignores an add whose id is already queued or
 * running, so this may run as often as anyone likes, from any worker and from the API.
 */
import type { JobsOptions, Queue } from 'bullmq';
import type { Knex } from 'knex';
import {
  CHUNK_JOB,
  LIST_JOB,
  listJobId,
  type ChunkJobData,
  type ListJobData,
  type MigrateJobData,
  type MigrationRow,
} from './index.ts';
import { completeIfDone, loadMigration, migrationOf, pendingChunks } from './ledger.ts';

export type MigrateQueue = Queue<MigrateJobData>;

export interface ScheduleOptions {
  /** Attempts and first backoff of a job (JOB_ATTEMPTS, JOB_BACKOFF_MS). */
  attempts: number;
  backoffMs: number;
  /** Chunks put back per migration and pass (MIGRATION_CHUNKS_AHEAD). */
  chunksAhead: number;
}

/** A finished job leaves Redis at once: the ledger has its outcome, so Redis stays small. */
export function migrateJobOptions(o: ScheduleOptions, jobId: string): JobsOptions {
  return {
    jobId,
    attempts: o.attempts,
    backoff: { type: 'exponential', delay: o.backoffMs },
    removeOnComplete: true,
    removeOnFail: true,
  };
}

/** Queues the listing step the migration is at. */
export async function enqueueListing(
  queue: MigrateQueue,
  m: Pick<MigrationRow, 'id' | 'tenantId' | 'listingStep'>,
  o: ScheduleOptions,
): Promise<void> {
  const data: ListJobData = { migrationId: m.id, tenantId: m.tenantId, step: m.listingStep };
  await queue.add(LIST_JOB, data, migrateJobOptions(o, listJobId(m.id, m.listingStep)));
}

/** Queues these chunks of the migration (one round trip). */
export async function enqueueChunks(
  queue: MigrateQueue,
  m: Pick<MigrationRow, 'id' | 'tenantId'>,
  chunks: string[],
  o: ScheduleOptions,
): Promise<void> {
  if (chunks.length === 0) return;
  await queue.addBulk(
    chunks.map((chunk) => ({
      name: CHUNK_JOB,
      data: { migrationId: m.id, tenantId: m.tenantId, chunk } satisfies ChunkJobData,
      opts: migrateJobOptions(o, chunk),
    })),
  );
}

/**
 * Puts a running migration's listing and unfinished chunks in the queue, or completes it when
 * nothing is left; answers true when this call completed it.
 */
export async function ensureInFlight(
  db: Knex,
  queue: MigrateQueue,
  migrationId: string,
  o: ScheduleOptions,
): Promise<boolean> {
  const m = await loadMigration(db, migrationId);
  if (!m || m.state !== 'running') return false;
  if (!m.listingDone) await enqueueListing(queue, m, o);
  const chunks = await pendingChunks(db, m.id, o.chunksAhead);
  await enqueueChunks(queue, m, chunks, o);
  return m.listingDone && chunks.length === 0 && completeIfDone(db, m.id);
}

/** One pass over every running migration; answers the ids it completed. */
export async function sweepMigrations(
  db: Knex,
  queue: MigrateQueue,
  o: ScheduleOptions,
): Promise<string[]> {
  const running = (await db('migrations').where({ state: 'running' }).orderBy('id')).map(
    migrationOf,
  );
  const completed: string[] = [];
  for (const m of running) if (await ensureInFlight(db, queue, m.id, o)) completed.push(m.id);
  return completed;
}
