/**
 * The one fan-out of cross-instance changes. Every state change that an
 * instance holds in memory is committed as a row of `change_log` with a monotonic `seq`
 * (migration 004); then it is applied here and published on the `changes` channel of the
 * process's bus (shared/fanout/bus.ts, Redis pub/sub), which is the fast path (milliseconds).
 * The safety net is always on: each instance reads the rows after the last one it saw every
 * `pollMs` and whenever the bus's subscriber reconnects, so a lost message (Redis down, a
 * subscriber reconnecting, a publish that failed) costs at most one poll period, and an instance
 * without Redis needs nothing else.
 *
 * Sequence numbers can commit out of order (two transactions, the later seq committing first),
 * so a missing seq is remembered as a gap and read again until it appears or is old enough to be
 * a rolled-back transaction. An instance that fell behind further than the log keeps (rows are
 * pruned after an hour) is told to resync: every listener reloads its whole state.
 *
 * The outline: `createChangeFeed` finds the starting position (`startingPosition`), and
 * LogChangeFeed's methods are the paths a change takes (made here, by message, by the poll).
 */
import type { Knex } from 'knex';
import type { Logger } from '../logger.ts';
import { CHANNELS, type FanoutBus } from './bus.ts';

/** What changed: the listeners of a kind know how to apply its `ref`. */
export type ChangeKind = 'token' | 'key' | 'client' | 'signing-keys' | 'tenant' | 'alias';

export interface Change {
  seq: number;
  kind: ChangeKind;
  /**
   * The changed thing: a jti, `<tenantId>:<kid>`, a client_id, a signing key id, a tenant id,
   * `<tenantId>:<alias name>`.
   */
  ref: string;
  data?: Record<string, unknown>;
}

/** The ref of a tenant's thing, `<tenantId>:<name>`. */
export const tenantRef = (tenantId: string, name: string): string => `${tenantId}:${name}`;

/** A tenant ref's two parts: a tenant id is a UUID, so the first colon ends it. */
export function splitTenantRef(ref: string): { tenantId: string; name: string } {
  const at = ref.indexOf(':');
  return { tenantId: ref.slice(0, at), name: ref.slice(at + 1) };
}

export interface ChangeFeed {
  /**
   * Writes a change inside `trx` (so it commits with the state it describes) and returns it;
   * call `announce` with it after the commit.
   */
  write(trx: Knex, kind: ChangeKind, ref: string, data?: Record<string, unknown>): Promise<Change>;
  /** Applies a committed change here and publishes it to the other instances; never throws. */
  announce(change: Change): void;
  /**
   * Writes and announces a change whose state was committed already. Never throws: when the
   * write fails (database gone right after the commit) it is applied here at once and retried
   * in the background until it is written, so the caller can answer its success status.
   */
  record(kind: ChangeKind, ref: string, data?: Record<string, unknown>): Promise<void>;
  /** Calls `listener` for every change of `kind`, from this or any other instance. */
  on(kind: ChangeKind, listener: (change: Change) => void): void;
  /** Called when changes may have been missed for good: reload the whole state. */
  onResync(listener: () => void | Promise<void>): void;
  /** Starts the subscriber and the poll; listeners registered before miss nothing. */
  start(): void;
  /** Reads the log now (on reconnect; tests). */
  catchUp(): Promise<void>;
  close(): Promise<void>;
}

export interface ChangeFeedOptions {
  /** Safety-net period. */
  pollMs?: number;
  /** How long a missing seq is waited for before it counts as a rolled-back transaction. */
  gapMs?: number;
  /** Rows older than this are pruned. */
  retentionMs?: number;
}

const PAGE = 1000;
const MAX_GAPS = 10_000;
const MAX_PENDING = 10_000;
/** How far below the head a starting instance looks for seqs still being committed. */
const START_WINDOW = 1000;

/** Creates the feed over the process's bus (none: the poll alone); `start()` once the listeners are registered. */
export async function createChangeFeed(
  db: Knex,
  logger: Logger,
  bus?: FanoutBus,
  opts: ChangeFeedOptions = {},
): Promise<ChangeFeed> {
  return new LogChangeFeed(db, logger, bus, opts, await startingPosition(db));
}

/** Where a starting instance stands in the log: everything up to `maxSeen`, but for `gaps`. */
interface Position {
  maxSeen: number;
  /** Seqs not seen yet (seq → when first missed). */
  gaps: Map<number, number>;
}

/**
 * The head of the log, with the seqs just below it that have no row yet: they may belong to
 * transactions still committing while this instance starts (their state is not in what it loads
 * next), so they are read again like any gap.
 */
async function startingPosition(db: Knex): Promise<Position> {
  const head = await db('change_log').max('seq as seq').first();
  const maxSeen = Number(head?.seq ?? 0);
  const gaps = new Map<number, number>();
  const recent = new Set(
    (
      await db('change_log')
        .where('seq', '>', Math.max(0, maxSeen - START_WINDOW))
        .select('seq')
    ).map((r) => Number(r.seq)),
  );
  for (let s = Math.max(1, maxSeen - START_WINDOW + 1); s <= maxSeen; s += 1)
    if (!recent.has(s)) gaps.set(s, Date.now());
  return { maxSeen, gaps };
}

const rowToChange = (r: {
  seq: string | number;
  kind: string;
  ref: string;
  data: string | null;
}): Change => ({
  seq: Number(r.seq),
  kind: r.kind as ChangeKind,
  ref: r.ref,
  ...(r.data ? { data: JSON.parse(r.data) as Record<string, unknown> } : {}),
});

/**
 * The feed, its steps by path: a change made here is written (`write`, `record`), applied once
 * (`accept`, `markSeen`, `dispatch`) and published (`publish`); one from another instance comes
 * by message (`onMessage`) or by reading the log (`catchUp`, `readLog`), which also expires old
 * gaps, reloads everything when something was missed for good (`resync`) and writes the changes
 * whose write failed (`flushPending`).
 */
class LogChangeFeed implements ChangeFeed {
  readonly #db: Knex;
  readonly #logger: Logger;
  readonly #bus: FanoutBus | undefined;
  readonly #pollMs: number;
  readonly #gapMs: number;
  readonly #retentionMs: number;
  readonly #listeners = new Map<ChangeKind, Array<(c: Change) => void>>();
  readonly #resyncListeners: Array<() => void | Promise<void>> = [];
  /** Everything up to maxSeen was seen, except the seqs in gaps (seq → when first missed). */
  #maxSeen: number;
  readonly #gaps: Map<number, number>;
  #overflowed = false;
  #resyncPending = false;
  /** Changes applied here whose write failed, oldest first. */
  readonly #pending: Array<Omit<Change, 'seq'>> = [];
  #subscribed = false;
  #timer: NodeJS.Timeout | null = null;
  #pruner: NodeJS.Timeout | null = null;
  #polling: Promise<void> | null = null;
  #closed = false;

  constructor(
    db: Knex,
    logger: Logger,
    bus: FanoutBus | undefined,
    opts: ChangeFeedOptions,
    position: Position,
  ) {
    this.#db = db;
    this.#logger = logger;
    this.#bus = bus;
    this.#pollMs = opts.pollMs ?? 1000;
    this.#gapMs = opts.gapMs ?? 10_000;
    this.#retentionMs = opts.retentionMs ?? 3_600_000;
    this.#maxSeen = position.maxSeen;
    this.#gaps = position.gaps;
  }

  // --- listeners

  on(kind: ChangeKind, listener: (change: Change) => void): void {
    const list = this.#listeners.get(kind) ?? [];
    list.push(listener);
    this.#listeners.set(kind, list);
  }

  onResync(listener: () => void | Promise<void>): void {
    this.#resyncListeners.push(listener);
  }

  // --- a change made here

  async write(
    trx: Knex,
    kind: ChangeKind,
    ref: string,
    data?: Record<string, unknown>,
  ): Promise<Change> {
    const [row] = await trx('change_log')
      .insert({ kind, ref, data: data ? JSON.stringify(data) : null })
      .returning('seq');
    return {
      seq: Number(typeof row === 'object' ? row.seq : row),
      kind,
      ref,
      ...(data ? { data } : {}),
    };
  }

  announce(change: Change): void {
    this.#accept(change);
    this.#publish(change);
  }

  async record(kind: ChangeKind, ref: string, data?: Record<string, unknown>): Promise<void> {
    try {
      const change = await this.write(this.#db, kind, ref, data);
      this.#accept(change);
      this.#publish(change);
    } catch (err) {
      this.#logger.error(
        { err: (err as Error).message, kind, ref },
        'change feed: could not write a change; applied here, written when the database answers',
      );
      this.#dispatch({ seq: 0, kind, ref, ...(data ? { data } : {}) });
      if (this.#pending.length < MAX_PENDING) this.#pending.push({ kind, ref, data });
      else
        this.#logger.error(
          { kind, ref },
          'change feed: too many unwritten changes; other instances may miss this one until they restart',
        );
    }
  }

  /** Tells the other instances at once; when Redis is away or refuses, the poll carries the change. */
  #publish(change: Change): void {
    void this.#bus?.publish(CHANNELS.changes, JSON.stringify(change));
  }

  // --- applying a change once

  /** Applies a change once, whichever path (local, pub/sub, poll) brings it first. */
  #accept(change: Change): void {
    if (this.#markSeen(change.seq)) this.#dispatch(change);
  }

  /** Marks a seq seen; false when it was seen already. */
  #markSeen(seq: number): boolean {
    if (seq > this.#maxSeen) {
      for (let s = this.#maxSeen + 1; s < seq; s += 1) {
        if (this.#gaps.size >= MAX_GAPS) {
          this.#overflowed = true; // too many to follow one by one: reload everything after the next read
          break;
        }
        this.#gaps.set(s, Date.now());
      }
      this.#maxSeen = seq;
      return true;
    }
    return this.#gaps.delete(seq);
  }

  #dispatch(change: Change): void {
    for (const l of this.#listeners.get(change.kind) ?? []) {
      try {
        l(change);
      } catch (err) {
        this.#logger.error(
          { err: (err as Error).message, kind: change.kind },
          'change listener failed',
        );
      }
    }
  }

  // --- changes from the other instances

  /** Starts the subscriber and the poll; listeners registered before miss nothing. */
  start(): void {
    const bus = this.#bus;
    if (bus && !this.#subscribed) {
      this.#subscribed = true;
      // After a reconnect the messages sent meanwhile are gone: read them from the log.
      bus.onReady(() => {
        if (!this.#closed) void this.catchUp();
      });
      void bus.on(CHANNELS.changes, (message) => {
        if (!this.#closed) this.#onMessage(message);
      });
    }
    this.#timer ??= setInterval(() => void this.catchUp(), this.#pollMs);
    this.#timer.unref();
    this.#pruner ??= setInterval(() => this.#prune(), Math.min(this.#retentionMs, 300_000));
    this.#pruner.unref();
  }

  /**
   * A message is applied at once but never moves the log position: only rows read from the
   * database do, so a bad or forged message (a huge seq) cannot make this instance skip the log.
   * The poll applies the same change again; every listener is idempotent.
   */
  #onMessage(message: string): void {
    try {
      const c = JSON.parse(message) as Change;
      if (
        typeof c.seq === 'number' &&
        typeof c.kind === 'string' &&
        typeof c.ref === 'string' &&
        this.#listeners.has(c.kind)
      )
        this.#dispatch(c);
    } catch {
      this.#logger.warn('change feed: ignored a malformed message');
    }
  }

  catchUp(): Promise<void> {
    this.#polling ??= this.#readLog()
      .catch((err) =>
        this.#logger.warn({ err: err.message }, 'change feed: reading the log failed; retrying'),
      )
      .finally(() => {
        this.#polling = null;
      });
    return this.#polling;
  }

  /** Reads the rows after the oldest gap (or the last seen), then settles gaps, resync and unwritten changes. */
  async #readLog(): Promise<void> {
    const db = this.#db;
    const started = Date.now();
    let from =
      this.#gaps.size > 0 ? Math.min(this.#maxSeen, ...this.#gaps.keys()) - 1 : this.#maxSeen;
    for (;;) {
      const rows = await db('change_log')
        .where('seq', '>', from)
        .orderBy('seq', 'asc')
        .limit(PAGE)
        .select('seq', 'kind', 'ref', 'data');
      if (
        rows.length > 0 &&
        from === this.#maxSeen &&
        Number(rows[0].seq) > this.#maxSeen + 1 &&
        this.#maxSeen > 0
      ) {
        // The rows after ours were pruned or lost: what they said can no longer be read one by one.
        const oldest = await db('change_log').min('seq as seq').first();
        if (Number(oldest?.seq) > this.#maxSeen + 1) this.#resyncPending = true;
      }
      for (const r of rows) this.#accept(rowToChange(r));
      if (rows.length < PAGE) break;
      from = Number(rows[rows.length - 1].seq);
    }
    // A gap expires only after a read that began when it was already old: a stalled poll must not
    // drop seqs it never looked for (they count as rolled-back transactions only then).
    for (const [seq, at] of this.#gaps) if (started - at > this.#gapMs) this.#gaps.delete(seq);
    if (this.#overflowed) {
      this.#overflowed = false;
      this.#resyncPending = true;
    }
    if (this.#resyncPending)
      await this.#resync(
        'log pruned past what this instance saw, too many missing seqs, or a failed reload',
      );
    await this.#flushPending();
  }

  /** Reloads every listener's state; a listener that fails is tried again after the next read of the log. */
  async #resync(reason: string): Promise<void> {
    this.#logger.warn(
      { reason },
      'change feed: changes may have been missed; reloading cached state',
    );
    this.#resyncPending = false;
    const results = await Promise.allSettled(
      this.#resyncListeners.map((l) => Promise.resolve().then(l)),
    );
    const failure = results.find((r) => r.status === 'rejected');
    if (failure) {
      this.#resyncPending = true;
      this.#logger.error(
        { err: ((failure as PromiseRejectedResult).reason as Error)?.message },
        'change feed: resync failed; retrying after the next read',
      );
    }
  }

  /** Writes the changes whose write failed, in order, and publishes them. */
  async #flushPending(): Promise<void> {
    while (this.#pending.length > 0) {
      const next = this.#pending[0];
      const change = await this.write(this.#db, next.kind, next.ref, next.data);
      this.#pending.shift();
      this.#markSeen(change.seq); // applied here when it was recorded
      this.#publish(change);
    }
  }

  /** Deletes the rows older than the retention. */
  #prune(): void {
    this.#db('change_log')
      .where('created_at', '<', new Date(Date.now() - this.#retentionMs))
      .delete()
      .catch((err) => this.#logger.warn({ err: err.message }, 'change feed: pruning failed'));
  }

  // --- closing

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#timer) clearInterval(this.#timer);
    if (this.#pruner) clearInterval(this.#pruner);
    await this.#polling;
    // Changes whose write failed are written now if the database answers, not lost with the process.
    await this.#flushPending().catch((err) =>
      this.#logger.error(
        { err: (err as Error).message, unwritten: this.#pending.length },
        'change feed: closing with unwritten changes; other instances miss them until they restart',
      ),
    );
  }
}
