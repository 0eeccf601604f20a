/**
 * The BullMQ processor of the `migrate` queue (docs/migrations.md): listing steps
 * (workers/jobs/migrate-listing.ts) and chunks of durable migrations.
 *
 * A chunk leases its objects in the ledger (one statement), checks with a HEAD per output that
 * an object recorded as converted still has its outputs (and converts it again when not),
 * converts the rest with bounded concurrency and records every outcome in one statement. Bad
 * input is an outcome (refused, with its problem); a transient fault leaves the object pending
 * and fails the chunk, which BullMQ retries with backoff.
 */
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { Job } from 'bullmq';
import type { Knex } from 'knex';
import type { Redis } from 'ioredis';
import type { Logger } from '../../shared/logger.ts';
import type { DomainMetrics } from '../../shared/metrics/index.ts';
import { AppError, namingTenant } from '../../shared/errors/index.ts';
import type { KeyResolver, SignerChecker } from '../../shared/pkcs7/types.ts';
import { tenantStore, type ObjectStore } from '../../shared/storage/index.ts';
import {
  CHUNK_JOB,
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
  loadMigration,
  othersLeaseEnd,
  recordOutcomes,
  releaseLeases,
  renewLeases,
} from '../../shared/migrations/ledger.ts';
import { type MigrateQueue, type ScheduleOptions } from '../../shared/migrations/schedule.ts';
import { reserveObjects } from '../../shared/migrations/rate.ts';
import { eachLimited } from '../../shared/each-limited.ts';
import { convertObject } from './convert-object.ts';
import { createListingStep, putBack } from './migrate-listing.ts';

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

/** Builds the processor. */
export function createMigrateProcessor(deps: MigrateDeps, worker = workerIdentity()) {
  const s = deps.settings;

  const runListing = createListingStep(deps);

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
      return putBack(job, token, wait);
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
          return putBack(job, token, waitMs);
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
        if (until) return putBack(job, token, until.getTime() - Date.now() + 200);
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
