/**
 * The audit log writer. Events are buffered and appended in batches so the hot path never waits
 * on the database; `flush()` and `close()` drain it. Each tenant's share of a batch is its own
 * transaction, with the chain position read and locked inside it, so:
 * - an event the database refuses sets aside that event only, never another tenant's or another
 *   event of the same tenant;
 * - only what did not commit is retried, and a group whose commit went unacknowledged (the
 *   connection dropped during COMMIT) is recognised by the head's `last_event` and not appended
 *   a second time;
 * - while the database is unreachable, events wait in memory (bounded) and are retried with
 *   backoff; what the bound turns away is counted per tenant and written as one
 *   `audit.events-lost` event when writing resumes, so the chain itself says what is missing.
 */
import type { DomainMetrics } from '../metrics/index.ts';
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { Logger } from '../logger.ts';
import { GENESIS_HASH, chainHash, type AuditContent } from './chain.ts';
import { auditDetails, auditText } from './content.ts';
import { AUDIT_LOG_ACTOR } from './actor.ts';

/** One event as callers describe it. */
export interface AuditInput {
  tenantId: string;
  actor: string;
  action: string;
  outcome: 'success' | 'failure' | 'denied';
  target?: string | null;
  details?: Record<string, unknown>;
}

export interface AuditLog {
  record(event: AuditInput): void;
  /**
   * Counts a high-rate runtime event (encrypt, sign, ...): identical events within one tally
   * window (TALLY_MS) become one chained event with `details.count`, so every operation is
   * accounted for without a row per operation.
   */
  tally(event: Omit<AuditInput, 'details'>): void;
  /** Writes what is buffered; resolves (without throwing) when written or when the database failed, in which case a retry is armed. */
  flush(): Promise<void>;
  /** A last flush; what still cannot be written is reported in the log. Idempotent. */
  close(): Promise<void>;
  /** Events waiting in memory for the database. */
  pending(): number;
}

/** Tuning, for tests and operators; the defaults suit production. */
export interface AuditLogOptions {
  /** Events kept in memory while the database is unreachable; beyond it events are counted, not kept. */
  maxPending?: number;
  /** First wait before retrying a failed write; it doubles up to retryMaxMs. */
  retryMinMs?: number;
  retryMaxMs?: number;
  /** Counts key lifecycle events and failed writes (the process's metrics). */
  metrics?: Pick<DomainMetrics, 'keyEvent' | 'auditFailure'>;
}

/** The action of the event that tells a chain how many of its events could not be kept. */
export const LOST_ACTION = 'audit.events-lost';

const FLUSH_MS = 100;
/**
 * A tally's window: identical runtime events within it become one chained event. 1 s rather than
 * FLUSH_MS: under steady runtime load every window is a transaction on the tenant's chain, and at
 * 100 ms those ten transactions a second cost the embedded database ~2 µs of CPU per encrypt
 * (bench: 1 KiB encrypts at 64 connections) and the API its query building.
 */
const TALLY_MS = 1000;
const MAX_BATCH = 1000;
const INSERT_CHUNK = 200;
const FULL_LOG_EVERY_MS = 10_000;

/** An event made storable, with the writer's id for it (not hashed, not stored in the event). */
interface Pending {
  id: string;
  tenantId: string;
  actor: string;
  action: string;
  outcome: string;
  target: string | null;
  details: Record<string, unknown>;
  at: Date;
}

/**
 * True when the database refused the data itself (SQLSTATE class 22 data exception, 23
 * integrity constraint, 54 program limit): retrying the same row cannot succeed. Anything else,
 * connection errors without a SQLSTATE included, is treated as transient.
 */
function refusedForGood(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^(22|23|54)[0-9A-Z]{3}$/.test(code);
}

/** The text fields as they are hashed and stored. */
const storableText = (e: Omit<AuditInput, 'details'>) => ({
  // The uuid column stores lower case, and verify hashes what it reads back.
  tenantId: String(e.tenantId).toLowerCase(),
  actor: auditText(String(e.actor)),
  action: auditText(String(e.action)),
  outcome: auditText(String(e.outcome)),
  target: e.target == null ? null : auditText(String(e.target)),
});

const storable = (
  e: Omit<AuditInput, 'details'> & { details?: Record<string, unknown> },
  at = new Date(),
): Pending => ({
  id: randomUUID(),
  ...storableText(e),
  details: auditDetails(e.details),
  at,
});

/** Creates a batching writer over the audit_events table. */
export function createAuditLog(db: Knex, logger: Logger, opts: AuditLogOptions = {}): AuditLog {
  const maxPending = opts.maxPending ?? 50_000;
  const retryMinMs = opts.retryMinMs ?? 100;
  const retryMaxMs = opts.retryMaxMs ?? 2_000;
  let queue: Pending[] = [];
  const tallies = new Map<
    string,
    { event: Omit<AuditInput, 'details'>; count: number; first: Date }
  >();
  const lost = new Map<string, { count: number; since: Date }>();
  let flushTimer: NodeJS.Timeout | null = null;
  let tallyTimer: NodeJS.Timeout | null = null;
  /** Whether the next drain takes the tallies too (their window ended, or a flush was asked for). */
  let talliesDue = false;
  let retryTimer: NodeJS.Timeout | null = null;
  let retryMs = retryMinMs;
  let downSince: Date | null = null;
  let lastFullLog = 0;
  let chain: Promise<void> = Promise.resolve();
  let queuedDrain: Promise<void> | null = null;
  let closing: Promise<void> | null = null;

  async function appendGroup(tenantId: string, events: Pending[]): Promise<void> {
    // Raw knex, not the AuditEvent model: an upsert, a row lock on the head and chunked inserts in
    // one transaction are the whole point here, and a model would only add a copy of each row.
    await db.transaction(async (trx) => {
      await trx('audit_heads')
        .insert({ tenant_id: tenantId, seq: 0, hash: GENESIS_HASH })
        .onConflict('tenant_id')
        .ignore();
      const head = await trx('audit_heads').where({ tenant_id: tenantId }).forUpdate().first();
      // A previous attempt that committed without the acknowledgement reaching us wrote a prefix
      // of this group (groups are retried front first, in order): skip it.
      const todo = events.slice(
        head.last_event ? events.findIndex((e) => e.id === head.last_event) + 1 : 0,
      );
      if (todo.length === 0) return;
      let seq = Number(head.seq);
      let prev = head.hash as string;
      const rows = todo.map((e) => {
        seq += 1;
        const content: AuditContent = {
          tenantId,
          seq,
          at: e.at.toISOString(),
          actor: e.actor,
          action: e.action,
          outcome: e.outcome,
          target: e.target,
          details: e.details,
        };
        const hash = chainHash(prev, content);
        const row = {
          tenant_id: tenantId,
          seq,
          at: e.at,
          actor: e.actor,
          action: e.action,
          outcome: e.outcome,
          target: e.target,
          details: JSON.stringify(e.details),
          prev_hash: prev,
          hash,
        };
        prev = hash;
        return row;
      });
      for (let i = 0; i < rows.length; i += INSERT_CHUNK)
        await trx('audit_events').insert(rows.slice(i, i + INSERT_CHUNK));
      const last = todo[todo.length - 1];
      await trx('audit_heads')
        .where({ tenant_id: tenantId })
        .update({ seq, hash: prev, at: last.at, last_event: last.id });
    });
  }

  function setAside(e: Pending, err: unknown): void {
    opts.metrics?.auditFailure('refused');
    logger.error(
      {
        err: (err as Error).message,
        code: (err as { code?: unknown }).code,
        event: {
          tenantId: e.tenantId,
          at: e.at.toISOString(),
          actor: e.actor,
          action: e.action,
          outcome: e.outcome,
          target: e.target,
        },
      },
      "the database refused an audit event; it is set aside and counted in the tenant's chain as lost",
    );
    // The count of a lost-count event that is itself refused (a tenant id that is no uuid) would loop.
    if (e.action !== LOST_ACTION) countLost(e.tenantId, e.at);
  }

  /** Writes one batch, one transaction per tenant; returns what must be retried and why. */
  async function writeBatch(batch: Pending[]): Promise<{ unwritten: Pending[]; down: unknown }> {
    const groups = new Map<string, Pending[]>();
    for (const e of batch) {
      const group = groups.get(e.tenantId);
      if (group) group.push(e);
      else groups.set(e.tenantId, [e]);
    }
    const unwritten: Pending[] = [];
    let down: unknown = null;
    for (const [tenantId, events] of groups) {
      // Once the database is unreachable, waiting on it again for every tenant only delays the retry.
      if (down) {
        unwritten.push(...events);
        continue;
      }
      try {
        await appendGroup(tenantId, events);
        continue;
      } catch (err) {
        if (!refusedForGood(err)) {
          down = err;
          unwritten.push(...events);
          continue;
        }
      }
      // Something in this group is refused: write it event by event so only that one is set aside.
      for (let i = 0; i < events.length; i += 1) {
        try {
          await appendGroup(tenantId, [events[i]]);
        } catch (err) {
          if (!refusedForGood(err)) {
            down = err;
            unwritten.push(...events.slice(i));
            break;
          }
          setAside(events[i], err);
        }
      }
    }
    return { unwritten, down };
  }

  async function drain(): Promise<void> {
    while (queue.length > 0) {
      const batch = queue.slice(0, MAX_BATCH);
      queue = queue.slice(batch.length);
      const { unwritten, down } = await writeBatch(batch);
      if (unwritten.length > 0) {
        queue = [...unwritten, ...queue];
        outage(down);
        return;
      }
    }
    if (downSince)
      logger.warn(
        { since: downSince.toISOString() },
        'audit log writing again; the events kept in memory are written',
      );
    downSince = null;
    retryMs = retryMinMs;
    // Lost counts wait for room in the queue; now there is room, and they belong in the chains.
    if (lost.size > 0) {
      gather(false);
      await drain();
    }
  }

  function outage(err: unknown): void {
    opts.metrics?.auditFailure('unavailable');
    if (!downSince) {
      downSince = new Date();
      logger.error(
        { err: (err as Error | null)?.message, pending: queue.length, maxPending },
        'audit events cannot be written; keeping them in memory and retrying',
      );
    }
    if (closing) return;
    // One retry chain: a drain that was queued behind the failed one must not arm a second.
    if (retryTimer) clearTimeout(retryTimer);
    retryTimer = setTimeout(() => {
      retryTimer = null;
      void flush();
    }, retryMs);
    retryTimer.unref();
    retryMs = Math.min(retryMs * 2, retryMaxMs);
  }

  function countLost(tenantId: string, at: Date): void {
    const entry = lost.get(tenantId);
    if (entry) entry.count += 1;
    else lost.set(tenantId, { count: 1, since: at });
  }

  function enqueue(e: Pending): void {
    if (queue.length < maxPending) {
      queue.push(e);
      return;
    }
    countLost(e.tenantId, e.at);
    opts.metrics?.auditFailure('lost');
    const now = Date.now();
    if (now - lastFullLog >= FULL_LOG_EVERY_MS) {
      lastFullLog = now;
      const counts = [...lost.values()].reduce((n, l) => n + l.count, 0);
      logger.error(
        {
          pending: queue.length,
          maxPending,
          lostSoFar: counts,
          tenants: lost.size,
          downSince: downSince?.toISOString(),
        },
        `audit buffer full: new events are counted per tenant (written as ${LOST_ACTION} once the database is back) instead of kept; restore the database connection`,
      );
    }
  }

  /** Moves lost counts, and the tallies when `withTallies`, into the queue as events. */
  function gather(withTallies: boolean): void {
    const now = new Date();
    if (withTallies) {
      for (const t of tallies.values())
        enqueue(
          storable({ ...t.event, details: { count: t.count, since: t.first.toISOString() } }, now),
        );
      tallies.clear();
    }
    for (const [tenantId, l] of lost) {
      if (queue.length >= maxPending) break;
      lost.delete(tenantId);
      queue.push(
        storable(
          {
            tenantId,
            actor: AUDIT_LOG_ACTOR,
            action: LOST_ACTION,
            outcome: 'failure',
            details: { count: l.count, since: l.since.toISOString() },
          },
          now,
        ),
      );
    }
  }

  function schedule(): void {
    if (flushTimer || retryTimer || closing) return;
    flushTimer = setTimeout(() => {
      flushTimer = null;
      void drainSoon();
    }, FLUSH_MS);
    flushTimer.unref();
  }

  /** Ends the tallies' window in TALLY_MS; while a retry is armed, that retry takes them. */
  function scheduleTallies(): void {
    if (tallyTimer || closing) return;
    tallyTimer = setTimeout(() => {
      tallyTimer = null;
      if (retryTimer) talliesDue = true;
      else void flush();
    }, TALLY_MS);
    tallyTimer.unref();
  }

  /** Writes everything buffered, tallies included. */
  function flush(): Promise<void> {
    talliesDue = true;
    if (tallyTimer) clearTimeout(tallyTimer);
    tallyTimer = null;
    return drainSoon();
  }

  /** Writes the queued events (and the tallies when due) after whatever drain is running. */
  function drainSoon(): Promise<void> {
    if (flushTimer) clearTimeout(flushTimer);
    if (retryTimer) clearTimeout(retryTimer);
    flushTimer = null;
    retryTimer = null;
    // One drain waiting behind the running one is enough: it takes whatever is queued when it starts.
    if (!queuedDrain) {
      const next: Promise<void> = chain
        .then(() => {
          queuedDrain = null;
          gather(talliesDue);
          talliesDue = false;
          return drain();
        })
        .catch((err: unknown) => {
          logger.error({ err: (err as Error).message }, 'audit log writer failed');
        });
      queuedDrain = next;
      chain = next;
    }
    return queuedDrain;
  }

  return {
    record(event) {
      if (closing) {
        logger.warn(
          { tenantId: event.tenantId, action: event.action },
          'audit event recorded after the audit log closed; not written',
        );
        return;
      }
      // Every key lifecycle change is audited here, whichever route or job made it: one count.
      if (event.outcome === 'success' && event.action.startsWith('key.'))
        opts.metrics?.keyEvent(event.action.slice(4));
      enqueue(storable(event));
      // While backing off, the armed retry takes it.
      if (retryTimer) return;
      if (queue.length >= MAX_BATCH) void flush();
      else schedule();
    },
    tally(raw) {
      if (closing) return;
      // Keyed by the raw fields (their lengths first, so no two splits meet), so the hot path of a
      // repeated operation is one Map lookup; the fields are made storable once per window.
      const target = raw.target ?? '';
      const key = `${raw.tenantId.length}.${raw.actor.length}.${raw.action.length}.${raw.outcome.length}:${raw.tenantId}${raw.actor}${raw.action}${raw.outcome}${target}`;
      const t = tallies.get(key);
      if (t) t.count += 1;
      else {
        const event = storableText(raw);
        tallies.set(key, {
          event: { ...event, outcome: raw.outcome },
          count: 1,
          first: new Date(),
        });
        scheduleTallies();
      }
    },
    flush,
    close() {
      closing ??= (async () => {
        await flush();
        const waiting = queue.length + [...lost.values()].reduce((n, l) => n + l.count, 0);
        if (waiting > 0) {
          const perTenant = new Map<string, number>();
          for (const e of queue) perTenant.set(e.tenantId, (perTenant.get(e.tenantId) ?? 0) + 1);
          for (const [tenantId, l] of lost)
            perTenant.set(tenantId, (perTenant.get(tenantId) ?? 0) + l.count);
          logger.error(
            {
              lost: waiting,
              perTenant: Object.fromEntries(perTenant),
              downSince: downSince?.toISOString(),
            },
            'audit log closed with events the database did not take; they are lost',
          );
        }
      })();
      return closing;
    },
    pending: () => queue.length,
  };
}
