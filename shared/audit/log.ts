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
 *
 * BatchingAuditLog below is these steps in the order an event meets them: taken in, timed,
 * gathered into the queue, written per tenant, and on an outage kept, counted and retried.
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
 * 100 ms those ten transactions a second cost the embedded database CPU on every encrypt and the
 * API its query building (bench/results/design-figures.md).
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
  return new BatchingAuditLog(db, logger, opts);
}

/** A tally's event while its window is open. */
interface Tally {
  event: Omit<AuditInput, 'details'>;
  count: number;
  first: Date;
}

/**
 * The writer, its steps in the order an event meets them: taken in (`record`, `tally`), timed
 * (`scheduleFlush`, `scheduleTallies`, `flush`, `drainSoon`), turned into queued events
 * (`gather`), written (`drain`, `writeBatch`, `appendGroup`, `setAside`), and on an outage
 * kept and counted (`outage`, `enqueue`, `countLost`) until `close`.
 */
class BatchingAuditLog implements AuditLog {
  readonly #db: Knex;
  readonly #logger: Logger;
  readonly #metrics: AuditLogOptions['metrics'];
  readonly #maxPending: number;
  readonly #retryMinMs: number;
  readonly #retryMaxMs: number;
  #queue: Pending[] = [];
  readonly #tallies = new Map<string, Tally>();
  readonly #lost = new Map<string, { count: number; since: Date }>();
  #flushTimer: NodeJS.Timeout | null = null;
  #tallyTimer: NodeJS.Timeout | null = null;
  /** Whether the next drain takes the tallies too (their window ended, or a flush was asked for). */
  #talliesDue = false;
  #retryTimer: NodeJS.Timeout | null = null;
  #retryMs: number;
  #downSince: Date | null = null;
  #lastFullLog = 0;
  #chain: Promise<void> = Promise.resolve();
  #queuedDrain: Promise<void> | null = null;
  #closing: Promise<void> | null = null;

  constructor(db: Knex, logger: Logger, opts: AuditLogOptions) {
    this.#db = db;
    this.#logger = logger;
    this.#metrics = opts.metrics;
    this.#maxPending = opts.maxPending ?? 50_000;
    this.#retryMinMs = opts.retryMinMs ?? 100;
    this.#retryMaxMs = opts.retryMaxMs ?? 2_000;
    this.#retryMs = this.#retryMinMs;
  }

  // --- taking events in

  record(event: AuditInput): void {
    if (this.#closing) {
      this.#logger.warn(
        { tenantId: event.tenantId, action: event.action },
        'audit event recorded after the audit log closed; not written',
      );
      return;
    }
    // Every key lifecycle change is audited here, whichever route or job made it: one count.
    if (event.outcome === 'success' && event.action.startsWith('key.'))
      this.#metrics?.keyEvent(event.action.slice(4));
    this.#enqueue(storable(event));
    // While backing off, the armed retry takes it.
    if (this.#retryTimer) return;
    if (this.#queue.length >= MAX_BATCH) void this.flush();
    else this.#scheduleFlush();
  }

  tally(raw: Omit<AuditInput, 'details'>): void {
    if (this.#closing) return;
    // Keyed by the raw fields (their lengths first, so no two splits meet), so the hot path of a
    // repeated operation is one Map lookup; the fields are made storable once per window.
    const target = raw.target ?? '';
    const key = `${raw.tenantId.length}.${raw.actor.length}.${raw.action.length}.${raw.outcome.length}:${raw.tenantId}${raw.actor}${raw.action}${raw.outcome}${target}`;
    const t = this.#tallies.get(key);
    if (t) t.count += 1;
    else {
      const event = storableText(raw);
      this.#tallies.set(key, {
        event: { ...event, outcome: raw.outcome },
        count: 1,
        first: new Date(),
      });
      this.#scheduleTallies();
    }
  }

  pending(): number {
    return this.#queue.length;
  }

  // --- timing the writes

  #scheduleFlush(): void {
    if (this.#flushTimer || this.#retryTimer || this.#closing) return;
    this.#flushTimer = setTimeout(() => {
      this.#flushTimer = null;
      void this.#drainSoon();
    }, FLUSH_MS);
    this.#flushTimer.unref();
  }

  /** Ends the tallies' window in TALLY_MS; while a retry is armed, that retry takes them. */
  #scheduleTallies(): void {
    if (this.#tallyTimer || this.#closing) return;
    this.#tallyTimer = setTimeout(() => {
      this.#tallyTimer = null;
      if (this.#retryTimer) this.#talliesDue = true;
      else void this.flush();
    }, TALLY_MS);
    this.#tallyTimer.unref();
  }

  /** Writes everything buffered, tallies included. */
  flush(): Promise<void> {
    this.#talliesDue = true;
    if (this.#tallyTimer) clearTimeout(this.#tallyTimer);
    this.#tallyTimer = null;
    return this.#drainSoon();
  }

  /** Writes the queued events (and the tallies when due) after whatever drain is running. */
  #drainSoon(): Promise<void> {
    if (this.#flushTimer) clearTimeout(this.#flushTimer);
    if (this.#retryTimer) clearTimeout(this.#retryTimer);
    this.#flushTimer = null;
    this.#retryTimer = null;
    // One drain waiting behind the running one is enough: it takes whatever is queued when it starts.
    if (!this.#queuedDrain) {
      const next: Promise<void> = this.#chain
        .then(() => {
          this.#queuedDrain = null;
          this.#gather(this.#talliesDue);
          this.#talliesDue = false;
          return this.#drain();
        })
        .catch((err: unknown) => {
          this.#logger.error({ err: (err as Error).message }, 'audit log writer failed');
        });
      this.#queuedDrain = next;
      this.#chain = next;
    }
    return this.#queuedDrain;
  }

  /** Moves lost counts, and the tallies when `withTallies`, into the queue as events. */
  #gather(withTallies: boolean): void {
    const now = new Date();
    if (withTallies) {
      for (const t of this.#tallies.values())
        this.#enqueue(
          storable({ ...t.event, details: { count: t.count, since: t.first.toISOString() } }, now),
        );
      this.#tallies.clear();
    }
    for (const [tenantId, l] of this.#lost) {
      if (this.#queue.length >= this.#maxPending) break;
      this.#lost.delete(tenantId);
      this.#queue.push(
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

  // --- writing

  /**
   * Writes the events queued when it starts. Those recorded while it writes wait for the next
   * window (FLUSH_MS) rather than following at once: under steady load, back-to-back drains made
   * a transaction of a handful of events every few milliseconds, several times the windows'
   * rate, and each costs the database and the API's event loop the same whatever its size.
   */
  async #drain(): Promise<void> {
    let due = this.#queue.length;
    while (due > 0) {
      const batch = this.#queue.slice(0, Math.min(due, MAX_BATCH));
      this.#queue = this.#queue.slice(batch.length);
      due -= batch.length;
      const { unwritten, down } = await this.#writeBatch(batch);
      if (unwritten.length > 0) {
        this.#queue = [...unwritten, ...this.#queue];
        this.#outage(down);
        return;
      }
    }
    if (this.#queue.length > 0) this.#scheduleFlush();
    if (this.#downSince)
      this.#logger.warn(
        { since: this.#downSince.toISOString() },
        'audit log writing again; the events kept in memory are written',
      );
    this.#downSince = null;
    this.#retryMs = this.#retryMinMs;
    // Lost counts wait for room in the queue; now there is room, and they belong in the chains.
    if (this.#lost.size > 0) {
      this.#gather(false);
      await this.#drain();
    }
  }

  /** Writes one batch, one transaction per tenant; returns what must be retried and why. */
  async #writeBatch(batch: Pending[]): Promise<{ unwritten: Pending[]; down: unknown }> {
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
        await this.#appendGroup(tenantId, events);
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
          await this.#appendGroup(tenantId, [events[i]]);
        } catch (err) {
          if (!refusedForGood(err)) {
            down = err;
            unwritten.push(...events.slice(i));
            break;
          }
          this.#setAside(events[i], err);
        }
      }
    }
    return { unwritten, down };
  }

  /** Appends one tenant's events to its chain in one transaction, skipping what already committed. */
  async #appendGroup(tenantId: string, events: Pending[]): Promise<void> {
    // Raw knex, not the AuditEvent model: an upsert, a row lock on the head and chunked inserts in
    // one transaction are the whole point here, and a model would only add a copy of each row.
    await this.#db.transaction(async (trx) => {
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

  /** Drops an event the database refused for good, counting it in its tenant's chain as lost. */
  #setAside(e: Pending, err: unknown): void {
    this.#metrics?.auditFailure('refused');
    this.#logger.error(
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
    if (e.action !== LOST_ACTION) this.#countLost(e.tenantId, e.at);
  }

  // --- an outage: keep, count, retry with backoff

  #outage(err: unknown): void {
    this.#metrics?.auditFailure('unavailable');
    if (!this.#downSince) {
      this.#downSince = new Date();
      this.#logger.error(
        {
          err: (err as Error | null)?.message,
          pending: this.#queue.length,
          maxPending: this.#maxPending,
        },
        'audit events cannot be written; keeping them in memory and retrying',
      );
    }
    if (this.#closing) return;
    // One retry chain: a drain that was queued behind the failed one must not arm a second.
    if (this.#retryTimer) clearTimeout(this.#retryTimer);
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = null;
      void this.flush();
    }, this.#retryMs);
    this.#retryTimer.unref();
    this.#retryMs = Math.min(this.#retryMs * 2, this.#retryMaxMs);
  }

  /** Queues an event, or counts it as lost for its tenant when the queue is full. */
  #enqueue(e: Pending): void {
    if (this.#queue.length < this.#maxPending) {
      this.#queue.push(e);
      return;
    }
    this.#countLost(e.tenantId, e.at);
    this.#metrics?.auditFailure('lost');
    const now = Date.now();
    if (now - this.#lastFullLog >= FULL_LOG_EVERY_MS) {
      this.#lastFullLog = now;
      const counts = [...this.#lost.values()].reduce((n, l) => n + l.count, 0);
      this.#logger.error(
        {
          pending: this.#queue.length,
          maxPending: this.#maxPending,
          lostSoFar: counts,
          tenants: this.#lost.size,
          downSince: this.#downSince?.toISOString(),
        },
        `audit buffer full: new events are counted per tenant (written as ${LOST_ACTION} once the database is back) instead of kept; restore the database connection`,
      );
    }
  }

  #countLost(tenantId: string, at: Date): void {
    const entry = this.#lost.get(tenantId);
    if (entry) entry.count += 1;
    else this.#lost.set(tenantId, { count: 1, since: at });
  }

  // --- closing

  close(): Promise<void> {
    this.#closing ??= this.#lastFlush();
    return this.#closing;
  }

  /** A last flush; what still waits is reported, per tenant, as lost. */
  async #lastFlush(): Promise<void> {
    await this.flush();
    const waiting = this.#queue.length + [...this.#lost.values()].reduce((n, l) => n + l.count, 0);
    if (waiting === 0) return;
    const perTenant = new Map<string, number>();
    for (const e of this.#queue) perTenant.set(e.tenantId, (perTenant.get(e.tenantId) ?? 0) + 1);
    for (const [tenantId, l] of this.#lost)
      perTenant.set(tenantId, (perTenant.get(tenantId) ?? 0) + l.count);
    this.#logger.error(
      {
        lost: waiting,
        perTenant: Object.fromEntries(perTenant),
        downSince: this.#downSince?.toISOString(),
      },
      'audit log closed with events the database did not take; they are lost',
    );
  }
}
