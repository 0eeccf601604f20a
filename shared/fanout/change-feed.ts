/**
 * The one fan-out of cross-instance changes (conventions rule 13). Every state change that an
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
  const pollMs = opts.pollMs ?? 1000;
  const gapMs = opts.gapMs ?? 10_000;
  const retentionMs = opts.retentionMs ?? 3_600_000;
  const listeners = new Map<ChangeKind, Array<(c: Change) => void>>();
  const resyncListeners: Array<() => void | Promise<void>> = [];
  // Everything up to maxSeen was seen, except the seqs in gaps (seq → when first missed).
  const head = await db('change_log').max('seq as seq').first();
  let maxSeen = Number(head?.seq ?? 0);
  const gaps = new Map<number, number>();
  // Seqs just below the head may belong to transactions still committing while this instance
  // starts (their state is not in what it loads next): they are read again like any gap.
  const recent = new Set(
    (
      await db('change_log')
        .where('seq', '>', Math.max(0, maxSeen - START_WINDOW))
        .select('seq')
    ).map((r) => Number(r.seq)),
  );
  for (let s = Math.max(1, maxSeen - START_WINDOW + 1); s <= maxSeen; s += 1)
    if (!recent.has(s)) gaps.set(s, Date.now());
  let overflowed = false;
  let resyncPending = false;
  const pending: Array<Omit<Change, 'seq'>> = [];
  let subscribed = false;
  let timer: NodeJS.Timeout | null = null;
  let pruner: NodeJS.Timeout | null = null;
  let polling: Promise<void> | null = null;
  let closed = false;

  function dispatch(change: Change): void {
    for (const l of listeners.get(change.kind) ?? []) {
      try {
        l(change);
      } catch (err) {
        logger.error({ err: (err as Error).message, kind: change.kind }, 'change listener failed');
      }
    }
  }

  /** Marks a seq seen; false when it was seen already. */
  function markSeen(seq: number): boolean {
    if (seq > maxSeen) {
      for (let s = maxSeen + 1; s < seq; s += 1) {
        if (gaps.size >= MAX_GAPS) {
          overflowed = true; // too many to follow one by one: reload everything after the next read
          break;
        }
        gaps.set(s, Date.now());
      }
      maxSeen = seq;
      return true;
    }
    return gaps.delete(seq);
  }

  /** Applies a change once, whichever path (local, pub/sub, poll) brings it first. */
  function accept(change: Change): void {
    if (markSeen(change.seq)) dispatch(change);
  }

  /** Reloads every listener's state; a listener that fails is tried again after the next read of the log. */
  async function resync(reason: string): Promise<void> {
    logger.warn({ reason }, 'change feed: changes may have been missed; reloading cached state');
    resyncPending = false;
    const results = await Promise.allSettled(resyncListeners.map((l) => Promise.resolve().then(l)));
    const failure = results.find((r) => r.status === 'rejected');
    if (failure) {
      resyncPending = true;
      logger.error(
        { err: ((failure as PromiseRejectedResult).reason as Error)?.message },
        'change feed: resync failed; retrying after the next read',
      );
    }
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

  async function readLog(): Promise<void> {
    const started = Date.now();
    let from = gaps.size > 0 ? Math.min(maxSeen, ...gaps.keys()) - 1 : maxSeen;
    for (;;) {
      const rows = await db('change_log')
        .where('seq', '>', from)
        .orderBy('seq', 'asc')
        .limit(PAGE)
        .select('seq', 'kind', 'ref', 'data');
      if (rows.length > 0 && from === maxSeen && Number(rows[0].seq) > maxSeen + 1 && maxSeen > 0) {
        // The rows after ours were pruned or lost: what they said can no longer be read one by one.
        const oldest = await db('change_log').min('seq as seq').first();
        if (Number(oldest?.seq) > maxSeen + 1) resyncPending = true;
      }
      for (const r of rows) accept(rowToChange(r));
      if (rows.length < PAGE) break;
      from = Number(rows[rows.length - 1].seq);
    }
    // A gap expires only after a read that began when it was already old: a stalled poll must not
    // drop seqs it never looked for (they count as rolled-back transactions only then).
    for (const [seq, at] of gaps) if (started - at > gapMs) gaps.delete(seq);
    if (overflowed) {
      overflowed = false;
      resyncPending = true;
    }
    if (resyncPending)
      await resync(
        'log pruned past what this instance saw, too many missing seqs, or a failed reload',
      );
    await flushPending();
  }

  async function flushPending(): Promise<void> {
    while (pending.length > 0) {
      const next = pending[0];
      const change = await write(db, next.kind, next.ref, next.data);
      pending.shift();
      markSeen(change.seq); // applied here when it was recorded
      publish(change);
    }
  }

  async function write(
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

  /** Tells the other instances at once; when Redis is away or refuses, the poll carries the change. */
  function publish(change: Change): void {
    void bus?.publish(CHANNELS.changes, JSON.stringify(change));
  }

  /**
   * A message is applied at once but never moves the log position: only rows read from the
   * database do, so a bad or forged message (a huge seq) cannot make this instance skip the log.
   * The poll applies the same change again; every listener is idempotent.
   */
  function onMessage(message: string): void {
    try {
      const c = JSON.parse(message) as Change;
      if (
        typeof c.seq === 'number' &&
        typeof c.kind === 'string' &&
        typeof c.ref === 'string' &&
        listeners.has(c.kind)
      )
        dispatch(c);
    } catch {
      logger.warn('change feed: ignored a malformed message');
    }
  }

  function catchUp(): Promise<void> {
    polling ??= readLog()
      .catch((err) =>
        logger.warn({ err: err.message }, 'change feed: reading the log failed; retrying'),
      )
      .finally(() => {
        polling = null;
      });
    return polling;
  }

  return {
    write,
    announce(change) {
      accept(change);
      publish(change);
    },
    async record(kind, ref, data) {
      try {
        const change = await write(db, kind, ref, data);
        accept(change);
        publish(change);
      } catch (err) {
        logger.error(
          { err: (err as Error).message, kind, ref },
          'change feed: could not write a change; applied here, written when the database answers',
        );
        dispatch({ seq: 0, kind, ref, ...(data ? { data } : {}) });
        if (pending.length < MAX_PENDING) pending.push({ kind, ref, data });
        else
          logger.error(
            { kind, ref },
            'change feed: too many unwritten changes; other instances may miss this one until they restart',
          );
      }
    },
    on(kind, listener) {
      const list = listeners.get(kind) ?? [];
      list.push(listener);
      listeners.set(kind, list);
    },
    onResync(listener) {
      resyncListeners.push(listener);
    },
    start() {
      if (bus && !subscribed) {
        subscribed = true;
        // After a reconnect the messages sent meanwhile are gone: read them from the log.
        bus.onReady(() => {
          if (!closed) void catchUp();
        });
        void bus.on(CHANNELS.changes, (message) => {
          if (!closed) onMessage(message);
        });
      }
      timer ??= setInterval(() => void catchUp(), pollMs);
      timer.unref();
      pruner ??= setInterval(
        () => {
          db('change_log')
            .where('created_at', '<', new Date(Date.now() - retentionMs))
            .delete()
            .catch((err) => logger.warn({ err: err.message }, 'change feed: pruning failed'));
        },
        Math.min(retentionMs, 300_000),
      );
      pruner.unref();
    },
    catchUp,
    async close() {
      if (closed) return;
      closed = true;
      if (timer) clearInterval(timer);
      if (pruner) clearInterval(pruner);
      await polling;
      // Changes whose write failed are written now if the database answers, not lost with the process.
      await flushPending().catch((err) =>
        logger.error(
          { err: (err as Error).message, unwritten: pending.length },
          'change feed: closing with unwritten changes; other instances miss them until they restart',
        ),
      );
    },
  };
}
