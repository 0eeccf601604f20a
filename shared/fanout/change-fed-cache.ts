/**
 * The one cache of what the hot paths read from the database (keys, workloads' credentials,
 * access keys, aliases): values by key, kept in memory and dropped on every instance when the
 * change feed carries a change that names them, and all of them on a resync.
 *
 * - Single flight: one load per key at a time; every lookup meanwhile waits for it.
 * - Generation guard: a load that began before a change naming its key (or before a resync) is
 *   answered to those waiting but never kept, and no lookup after the change joins it.
 * - Bounded: at most `max` values and `max` absences, the oldest dropped first.
 * - Optionally: a TTL; a refresh ahead of it (a hit past `refreshAfterMs` reloads in the
 *   background, so a busy key never waits for the database); absences remembered for a while (an
 *   unknown name is not a database read on every attempt); and batched loads (`batch` > 1: the
 *   keys asked for meanwhile are read together, one batch at a time, and entries in use from
 *   `joinAfterMs` of age join a batch that is read anyway, so their refreshes come due together).
 */
import type { Change, ChangeFeed, ChangeKind } from './change-feed.ts';

export interface ChangeFedCacheOptions<V> {
  /** The feed whose changes of `kind` drop entries, and whose resync drops them all. */
  feed: Pick<ChangeFeed, 'on' | 'onResync'>;
  kind: ChangeKind;
  /**
   * Whether a change names the entry of `key` (its value when loaded). Left out, a change names
   * the key equal to its ref, found directly; given, every entry and load in flight is tested.
   */
  names?: (change: Change, key: string, value: V | undefined) => boolean;
  /** Loads the values of some keys (at most `batch`); a key left out of the answer has none. */
  load: (keys: string[]) => Promise<ReadonlyMap<string, V>>;
  /** Values kept at most, and absences at most. */
  max: number;
  /** Keys read in one load; more than 1 reads one batch at a time (default 1: each key alone). */
  batch?: number;
  /** How long a value is used (default: until a change names it). */
  ttlMs?: number;
  /** From this age a hit is answered and reloaded in the background (below ttlMs). */
  refreshAfterMs?: number;
  /** From this age a value looked up since its load joins a batch read anyway (with `batch`). */
  joinAfterMs?: number;
  /** How long a key found without a value answers so without a load (default 0: not at all). */
  absentTtlMs?: number;
}

interface Entry<V> {
  value: V;
  /** The answer of every hit, made once. */
  answer: Promise<V>;
  loadedAt: number;
  /** Looked up since its load (what joinAfterMs reads along). */
  used: boolean;
}

interface Flight<V> {
  promise: Promise<V | undefined>;
  /** A change named the key after the load began: its answer is not kept. */
  stale: boolean;
}

type Waiting<V> = PromiseWithResolvers<V | undefined> & { flight: Flight<V> };

const noop = () => undefined;

export class ChangeFedCache<V> {
  readonly #options: ChangeFedCacheOptions<V>;
  readonly #batch: number;
  readonly #ttl: number;
  readonly #absentTtl: number;
  readonly #entries = new Map<string, Entry<V>>();
  readonly #absent = new Map<string, number>();
  readonly #flights = new Map<string, Flight<V>>();
  #queued = new Map<string, Waiting<V>>();
  #reading = false;
  #scheduled = false;

  constructor(options: ChangeFedCacheOptions<V>) {
    this.#options = options;
    this.#batch = Math.max(1, options.batch ?? 1);
    this.#ttl = options.ttlMs ?? Infinity;
    this.#absentTtl = options.absentTtlMs ?? 0;
    options.feed.on(options.kind, (change) => this.#changed(change));
    options.feed.onResync(() => this.clear());
  }

  /** The answer of a fresh value without a load (a stored promise: no allocation), else undefined. */
  hit(key: string): Promise<V> | undefined {
    const entry = this.#entries.get(key);
    if (!entry) return undefined;
    // Kept until a change: no clock to read.
    if (this.#ttl === Infinity && this.#options.refreshAfterMs === undefined) return entry.answer;
    const age = Date.now() - entry.loadedAt;
    if (age >= this.#ttl) return undefined;
    const { refreshAfterMs } = this.#options;
    // A failed background reload is left to the next lookup past the TTL, which reports it.
    if (refreshAfterMs !== undefined && age >= refreshAfterMs) this.#load(key).catch(noop);
    else entry.used = true;
    return entry.answer;
  }

  /** The value of `key`, loaded when not held; undefined when it has none. */
  get(key: string): Promise<V | undefined> {
    const hit = this.hit(key);
    if (hit) return hit;
    const at = this.#absent.get(key);
    if (at !== undefined && Date.now() - at < this.#absentTtl) return Promise.resolve(undefined);
    return this.#load(key);
  }

  /** Drops `key` here (its change, recorded by the caller, drops it on the other instances). */
  forget(key: string): void {
    this.#entries.delete(key);
    this.#absent.delete(key);
    const flight = this.#flights.get(key);
    if (flight) {
      flight.stale = true;
      this.#flights.delete(key);
    }
  }

  /** Drops everything (a resync: changes may have been missed). */
  clear(): void {
    this.#entries.clear();
    this.#absent.clear();
    for (const flight of this.#flights.values()) flight.stale = true;
    this.#flights.clear();
  }

  /** Values held (for tests and metrics). */
  get size(): number {
    return this.#entries.size;
  }

  #changed(change: Change): void {
    const { names } = this.#options;
    if (!names) return this.forget(change.ref);
    for (const [key, entry] of this.#entries)
      if (names(change, key, entry.value)) this.#entries.delete(key);
    for (const key of this.#absent.keys())
      if (names(change, key, undefined)) this.#absent.delete(key);
    // A load in flight has no value to test yet: it may read what the change replaced.
    for (const flight of this.#flights.values()) flight.stale = true;
    this.#flights.clear();
  }

  /** One load per key at a time; what it reads is kept unless a change named the key meanwhile. */
  #load(key: string): Promise<V | undefined> {
    const current = this.#flights.get(key);
    if (current) return current.promise;
    const flight = { stale: false } as Flight<V>;
    if (this.#batch === 1) {
      flight.promise = this.#options.load([key]).then(
        (found) => this.#settle(key, flight, found.get(key)),
        (err: unknown) => {
          this.#land(key, flight);
          throw err;
        },
      );
    } else {
      // Still waiting for its batch (a change dropped its flight): that read comes after the change.
      let waiting = this.#queued.get(key);
      if (!waiting) {
        waiting = Object.assign(Promise.withResolvers<V | undefined>(), { flight });
        this.#queued.set(key, waiting);
        this.#schedule();
      } else waiting.flight = flight;
      flight.promise = waiting.promise;
    }
    this.#flights.set(key, flight);
    return flight.promise;
  }

  /** Keeps what a load read, unless stale; answers it either way. */
  #settle(key: string, flight: Flight<V>, value: V | undefined): V | undefined {
    this.#land(key, flight);
    if (flight.stale) return value;
    if (value === undefined) {
      this.#entries.delete(key);
      if (this.#absentTtl > 0) {
        this.#absent.delete(key);
        if (this.#absent.size >= this.#options.max) this.#absent.delete(this.#oldest(this.#absent));
        this.#absent.set(key, Date.now());
      }
    } else {
      this.#absent.delete(key);
      this.#entries.delete(key);
      if (this.#entries.size >= this.#options.max)
        this.#entries.delete(this.#oldest(this.#entries));
      this.#entries.set(key, {
        value,
        answer: Promise.resolve(value),
        loadedAt: Date.now(),
        used: false,
      });
    }
    return value;
  }

  #land(key: string, flight: Flight<V>): void {
    if (this.#flights.get(key) === flight) this.#flights.delete(key);
  }

  #oldest(map: Map<string, unknown>): string {
    return map.keys().next().value as string;
  }

  #schedule(): void {
    if (this.#reading || this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      void this.#readQueued();
    });
  }

  /** Reads one batch of the queued keys; the rest wait for the next. */
  async #readQueued(): Promise<void> {
    if (this.#queued.size === 0) return;
    this.#reading = true;
    this.#joinNearlyDue();
    const batch = [...this.#queued].slice(0, this.#batch);
    if (batch.length === this.#queued.size) this.#queued = new Map();
    else for (const [key] of batch) this.#queued.delete(key);
    try {
      const found = await this.#options.load(batch.map(([key]) => key));
      for (const [key, waiting] of batch)
        waiting.resolve(this.#settle(key, waiting.flight, found.get(key)));
    } catch (err) {
      for (const [key, waiting] of batch) {
        this.#land(key, waiting.flight);
        waiting.reject(err);
      }
    } finally {
      this.#reading = false;
      if (this.#queued.size > 0) this.#schedule();
    }
  }

  /** Queues the values in use from joinAfterMs of age, up to a full batch. */
  #joinNearlyDue(): void {
    const { joinAfterMs } = this.#options;
    if (joinAfterMs === undefined) return;
    const now = Date.now();
    for (const [key, entry] of this.#entries) {
      if (this.#queued.size >= this.#batch) return;
      // A failed read is left to the next lookup past the TTL, which reports it.
      if (entry.used && now - entry.loadedAt >= joinAfterMs) {
        entry.used = false;
        this.#load(key).catch(noop);
      }
    }
  }
}
