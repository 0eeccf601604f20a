/**
 * The BullMQ processor of the `migrate` queue (docs/migrations.md): listing steps and chunks of
 * durable migrations.
 *
 * A listing step lists one page of the source after the migration's cursor, cuts it into chunks
 * (MIGRATION_CHUNK_OBJECTS objects or MIGRATION_CHUNK_BYTES of input, whichever comes first),
 * records the rows, the cursor and the next step in one transaction, then queues the chunks and
 * the next step. While MIGRATION_CHUNKS_AHEAD chunks wait, the step waits (delayed, not run), so
 * Redis holds a bounded number of chunks whatever the number of objects.
 *
 * A chunk leases its objects in the ledger (one statement), checks with a HEAD per output that
 * an object recorded as converted still has its outputs (and converts it again when not),
 * converts the rest with bounded concurrency and records every outcome in one statement. Bad
 * input is an outcome (refused, with its problem); a transient fault leaves the object pending
 * and fails the chunk, which BullMQ retries with backoff.
 */
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { DelayedError, type Job } from 'bullmq';
import type { Knex } from 'knex';
import type { Redis } from 'ioredis';
import type { Logger } from '../../shared/logger.ts';
import type { DomainMetrics } from '../../shared/metrics/index.ts';
import { AppError, namingTenant } from '../../shared/errors/index.ts';
import type { KeyResolver, SignerChecker } from '../../shared/pkcs7/types.ts';
import { tenantStore, type ObjectInfo, type ObjectStore } from '../../shared/storage/index.ts';
import { sourceVersionOf } from '../../shared/queues/index.ts';
import {
  CHUNK_JOB,
  chunkName,
  type ChunkJobData,
  type LedgerRow,
  type ListJobData,
  type MigrateJobData,
  type MigrationRow,
  type ObjectOutcome,
} from '../../shared/migrations/index.ts';
import {
  claimChunk,
  completeIfDone,
  insertListed,
  loadMigration,
  othersLeaseEnd,
  recordOutcomes,
  releaseLeases,
  renewLeases,
  type ListedObject,
} from '../../shared/migrations/ledger.ts';
import {
  enqueueChunks,
  enqueueListing,
  type MigrateQueue,
  type ScheduleOptions,
} from '../../shared/migrations/schedule.ts';
import { reserveObjects } from '../../shared/migrations/rate.ts';
import { convertObject } from './convert-object.ts';

/** Objects listed per step: one S3 page. */
const LIST_PAGE = 1000;

export interface MigrateSettings extends ScheduleOptions {
  prefix: string;
  chunkObjects: number;
  chunkBytes: number;
  objectConcurrency: number;
  leaseMs: number;
  tenantRate: number;
}

export interface MigrateDeps {
  db: Knex;
  redis: Redis;
  objects: ObjectStore;
  queue: MigrateQueue;
  settings: MigrateSettings;
  /** The tenant's keys, decrypting as the migration's creator may (null: no decryption). */
  resolverFor(tenantId: string, decryptPrincipal: string | null): KeyResolver;
  checkSigners?: SignerChecker;
  logger: Logger;
  metrics?: Pick<DomainMetrics, 'conversion'>;
  /** Runs once when a migration completes. */
  onCompleted(migrationId: string): Promise<void>;
}

/** This process's name in the ledger's `worker` and lease columns. */
export function workerIdentity(): string {
  return `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
}

/** The part of a key below its prefix's folder: `in/a/x.p7m` under `in/` (or `in/a`) is `a/x.p7m`. */
function relativeTo(prefix: string, key: string): string {
  return key.slice(prefix.lastIndexOf('/') + 1);
}

/** Where an object's outputs go, without extension: the same name on every run. */
export function outputBaseOf(
  m: Pick<MigrationRow, 'source' | 'outputPrefix'>,
  key: string,
): string {
  return 'prefix' in m.source
    ? m.outputPrefix + relativeTo(m.source.prefix, key)
    : m.outputPrefix + key;
}

/**
 * When every fault of a chunk is a spent decryption-failure budget, how long the chunk waits
 * before it tries again (put back without using an attempt). The budget also counts decryptions
 * in flight (each reserves a point until it succeeds), so many workers on one key can find it
 * spent for a moment: the wait is the budget's Retry-After, at most a few seconds.
 */
function budgetWait(errors: Error[]): number | null {
  let seconds = 0;
  for (const err of errors) {
    if (!(err instanceof AppError && err.code === 'rate_limited')) return null;
    seconds = Math.max(seconds, Number(err.headers?.['Retry-After'] ?? 1) || 1);
  }
  return Math.min(seconds, BUDGET_RETRY_MAX_S) * 1000 * (0.5 + Math.random() / 2);
}

/** The longest a chunk waits for a spent decryption-failure budget before it tries again. */
const BUDGET_RETRY_MAX_S = 5;

/** Runs `fn` over `items`, at most `limit` at once. */
async function eachLimited<T>(items: T[], limit: number, fn: (item: T) => Promise<void>) {
  let next = 0;
  const lanes = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) await fn(items[next++]);
  });
  await Promise.all(lanes);
}

/** Builds the processor. */
export function createMigrateProcessor(deps: MigrateDeps, worker = workerIdentity()) {
  const s = deps.settings;

  /** Puts the job back for later without spending an attempt (BullMQ's own way). */
  async function later(job: Job, token: string | undefined, ms: number): Promise<never> {
    await job.moveToDelayed(Date.now() + Math.max(50, Math.ceil(ms)), token);
    throw new DelayedError();
  }

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
    if (ahead >= s.chunksAhead) return later(job, token, 250 + Math.random() * 250);
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

  /** Whether an object recorded as converted still has its outputs as recorded (one HEAD each). */
  async function outputsIntact(objects: ObjectStore, row: LedgerRow): Promise<boolean> {
    if (row.outputs.length === 0) return false;
    const found = await Promise.all(row.outputs.map((o) => objects.head(o.key)));
    return found.every(
      (info, i) =>
        info !== null &&
        info.size === row.outputs[i].size &&
        (!row.outputs[i].etag || !info.etag || info.etag === row.outputs[i].etag),
    );
  }

  /** Converts one object; a refusal is an outcome, a transient fault is thrown. */
  async function convertRow(
    m: MigrationRow,
    objects: ObjectStore,
    row: LedgerRow,
    resolver: KeyResolver,
  ): Promise<ObjectOutcome> {
    const startedAt = new Date();
    const began = Date.now();
    let form = 'unknown';
    let read = 0;
    try {
      const c = await convertObject({
        objects,
        sourceKey: row.sourceKey,
        outputBase: outputBaseOf(m, row.sourceKey),
        metadata: m.metadata,
        resolver,
        onInputType: (t) => (form = t),
        onRead: (n) => (read += n),
        ...(deps.checkSigners ? { checkSigners: deps.checkSigners } : {}),
      });
      deps.metrics?.conversion(form, 'success', read, (Date.now() - began) / 1000);
      return {
        sourceKey: row.sourceKey,
        outcome: 'converted',
        inputSize: c.input.size,
        inputSha256: c.input.sha256,
        form: c.inputType,
        outputs: c.outputs.map(({ role, key, size, sha256, contentType, etag }) => ({
          role,
          key,
          size,
          sha256,
          contentType,
          ...(etag ? { etag } : {}),
        })),
        keys: c.keys,
        signers: c.signers,
        startedAt,
      };
    } catch (caught) {
      const err = namingTenant(caught, m.tenantId);
      // A spent decryption-failure budget says nothing of the object: it waits for the window.
      const bad =
        err instanceof AppError &&
        err.code !== 'rate_limited' &&
        (err.status < 500 ||
          (err.code === 'storage_unavailable' && err.details?.transient === false));
      deps.metrics?.conversion(form, bad ? 'refused' : 'error', read, (Date.now() - began) / 1000);
      if (!bad) throw err;
      return {
        sourceKey: row.sourceKey,
        outcome: 'refused',
        inputSize: read > 0 ? read : row.inputSize,
        inputSha256: null,
        form: form === 'unknown' ? null : form,
        problem: err.slug,
        detail: err.message,
        startedAt,
      };
    }
  }

  async function runChunk(job: Job<ChunkJobData>, token?: string): Promise<unknown> {
    const { migrationId, chunk } = job.data;
    const m = await loadMigration(deps.db, migrationId);
    if (!m || m.state !== 'running') return { skipped: m?.state ?? 'gone' };
    const rows = await claimChunk(deps.db, m.id, chunk, worker, s.leaseMs);
    const pending = rows.filter((r) => r.outcome === null);
    const wait = await reserveObjects(
      deps.redis,
      {
        prefix: s.prefix,
        migrationId: m.id,
        tenantId: m.tenantId,
        migrationRate: m.rateLimit,
        tenantRate: s.tenantRate,
      },
      pending.length,
    );
    if (wait > 0) {
      await releaseLeases(
        deps.db,
        m.id,
        rows.map((r) => r.sourceKey),
        worker,
      );
      return later(job, token, wait);
    }
    const heartbeat = setInterval(
      () =>
        void renewLeases(deps.db, m.id, chunk, worker, s.leaseMs).catch((err: Error) =>
          deps.logger.warn({ err: err.message, chunk }, 'could not renew leases'),
        ),
      Math.max(250, Math.floor(s.leaseMs / 3)),
    );
    const log = deps.logger.child({ migrationId: m.id, chunk });
    try {
      const objects = tenantStore(deps.objects, m.tenantId);
      const resolver = deps.resolverFor(m.tenantId, m.decryptPrincipal);
      const work: LedgerRow[] = [...pending];
      const kept: string[] = [];
      await eachLimited(
        rows.filter((r) => r.outcome === 'converted'),
        s.objectConcurrency * 4,
        async (row) => {
          if (await outputsIntact(objects, row)) kept.push(row.sourceKey);
          else {
            log.warn({ source: row.sourceKey }, 'outputs missing or changed: converting again');
            work.push(row);
          }
        },
      );
      await releaseLeases(deps.db, m.id, kept, worker);
      const outcomes: ObjectOutcome[] = [];
      const faults: { key: string; err: Error }[] = [];
      await eachLimited(work, s.objectConcurrency, async (row) => {
        try {
          outcomes.push(await convertRow(m, objects, row, resolver));
        } catch (err) {
          faults.push({ key: row.sourceKey, err: err as Error });
        }
      });
      clearInterval(heartbeat);
      const written = await recordOutcomes(deps.db, m.id, worker, worker, outcomes);
      if (written < outcomes.length)
        log.warn(
          { lost: outcomes.length - written },
          'leases ran out before the outcomes were written; those objects went to another worker',
        );
      if (faults.length > 0) {
        await releaseLeases(
          deps.db,
          m.id,
          faults.map((f) => f.key),
          worker,
        );
        const waitMs = budgetWait(faults.map((f) => f.err));
        if (waitMs !== null) {
          log.warn(
            { objects: faults.length, retryInMs: waitMs },
            "the migration's creator spent its decryption-failure budget on a key: the chunk waits for the window to end",
          );
          return later(job, token, waitMs);
        }
        log.warn(
          { objects: faults.length, err: faults[0].err.message },
          'transient faults: the chunk will be retried',
        );
        throw new Error(`transient fault on ${faults.length} object(s): ${faults[0].err.message}`);
      }
      if (await completeIfDone(deps.db, m.id)) await deps.onCompleted(m.id);
      else {
        // Objects of this chunk another worker leases: looked at again when its lease ends.
        const until = await othersLeaseEnd(deps.db, m.id, chunk, worker);
        if (until) return later(job, token, until.getTime() - Date.now() + 200);
      }
      return {
        converted: outcomes.filter((o) => o.outcome === 'converted').length,
        kept: kept.length,
      };
    } finally {
      clearInterval(heartbeat);
    }
  }

  return async function processMigrate(job: Job<MigrateJobData>, token?: string): Promise<unknown> {
    return job.name === CHUNK_JOB
      ? runChunk(job as Job<ChunkJobData>, token)
      : runListing(job as Job<ListJobData>, token);
  };
}
