/**
 * Workload client secrets: random UUIDs (122 bits; the spec gives client_secret as a UUID
 * string) stored only as HMAC-SHA-256 under a server pepper derived from the master key, and
 * compared in constant time. A rotated-out secret keeps working until its `valid_until`.
 */
import {
  createHmac,
  createSecretKey,
  randomBytes,
  randomUUID,
  timingSafeEqual,
  type KeyObject,
} from 'node:crypto';
import type { Knex } from 'knex';
import { Role } from '../../../shared/db/models/identities.ts';
import type { ChangeFeed } from '../../../shared/fanout/change-feed.ts';
import { ChangeFedCache } from '../../../shared/fanout/change-fed-cache.ts';

const CACHE_TTL_MS = 5_000;
/**
 * From this age a hit also reloads the workload in the background, so a client that keeps
 * calling never waits for the database: with a plain expiry, every busy client's entry lapsed at
 * once every 5 s and their requests queued behind the reloads (the token endpoint's p99 many
 * times its p50 under load; bench/results/design-figures.md). No entry older than CACHE_TTL_MS is used.
 */
const REFRESH_AFTER_MS = 4_000;
/** Workloads read in one query at most (an IN list of client ids). */
const LOAD_BATCH = 500;
/**
 * From this age an entry that was looked up since it was loaded is read along with a batch that
 * is read anyway, so the entries of the clients that keep calling come due together and one read
 * refreshes them all; otherwise they stay as staggered as their first loads were (a batch every
 * 30 ms or so, 12 to 18 reads per refresh round at 64 clients).
 */
const JOIN_AFTER_MS = 3_000;

/** What an unknown client id's secret is compared with: one secret, as most workloads have. */
const DUMMY_SECRETS: WorkloadCredentials['secrets'] = [{ hash: randomBytes(32), validUntil: null }];

/**
 * Workloads held at most, and client ids that name none (each; the oldest forgotten first). An
 * unknown id is remembered CACHE_TTL_MS as a known one is: otherwise it read the database on every
 * attempt, twice per request, while a known one came from the cache, so an id answered three times
 * slower when it did not exist. A workload's client id is a random UUID made with it, so none is
 * created while remembered as unknown; any change to a client forgets it here as well.
 */
const MAX_CACHED = 10_000;

/** What the token endpoint needs to know about a workload, cached briefly. */
export interface WorkloadCredentials {
  workloadId: string;
  clientId: string;
  tenantId: string;
  tenantActive: boolean;
  disabled: boolean;
  permissions: string[];
  secrets: Array<{ hash: Buffer; validUntil: number | null }>;
  loadedAt: number;
}

/** The workloads' client secrets, over the workloads tables; credentials cached by client id. */
export class ClientSecrets {
  readonly #db: Knex;
  readonly #feed: ChangeFeed;
  /** A KeyObject is imported once; a raw Buffer key would be re-imported on every HMAC (~5x slower). */
  readonly #pepperKey: KeyObject;
  /**
   * The workloads by client id. Reads wait for their turn: one batch is read at a time, and
   * whatever lookups ask for meanwhile is read together after it. Reading each workload on its
   * own cost two round trips per client every REFRESH_AFTER_MS, all due together since the
   * entries were loaded together: at 64 busy clients, 128 queries in a burst every 4 s, which on
   * the embedded database (one backend, one connection) took 0.4 to 2.3 s to drain under load,
   * long enough for entries to lapse and their requests to wait on the database.
   */
  readonly #cache: ChangeFedCache<WorkloadCredentials>;

  constructor(db: Knex, pepper: Buffer, feed: ChangeFeed) {
    this.#db = db;
    this.#feed = feed;
    this.#pepperKey = createSecretKey(pepper);
    this.#cache = new ChangeFedCache<WorkloadCredentials>({
      feed,
      kind: 'client',
      load: (clientIds) => this.#loadMany(clientIds),
      batch: LOAD_BATCH,
      max: MAX_CACHED,
      ttlMs: CACHE_TTL_MS,
      refreshAfterMs: REFRESH_AFTER_MS,
      joinAfterMs: JOIN_AFTER_MS,
      absentTtlMs: CACHE_TTL_MS,
    });
  }

  /** Generates a secret and its stored hash. */
  generate(): { secret: string; hash: string } {
    const secret = randomUUID();
    return { secret, hash: this.hash(secret) };
  }

  hash(secret: string): string {
    return createHmac('sha256', this.#pepperKey).update(secret, 'utf8').digest('hex');
  }

  /** Credentials by client_id (cached 5 s; invalidated on change across instances). */
  async lookup(clientId: string): Promise<WorkloadCredentials | null> {
    return (await this.#cache.get(clientId)) ?? null;
  }

  /**
   * Constant-time check against every currently valid secret; with no workload (an unknown
   * client id), the same work against a dummy secret, and false.
   */
  matches(creds: WorkloadCredentials | null, secret: string): boolean {
    const candidate = Buffer.from(this.hash(secret), 'hex');
    const now = Date.now();
    let ok = false;
    // Check every secret (no early exit) so timing does not tell which one matched.
    for (const s of creds?.secrets ?? DUMMY_SECRETS) {
      const valid = s.validUntil === null || s.validUntil > now;
      if (timingSafeEqual(candidate, s.hash) && valid) ok = true;
    }
    return ok && creds !== null;
  }

  /** Drops a cached workload here and, through the change feed, on every instance. */
  async invalidate(clientId: string): Promise<void> {
    this.#cache.forget(clientId);
    await this.#feed.record('client', clientId);
  }

  /** Reads the workloads of `clientIds` (at most LOAD_BATCH) in two queries, whatever their number. */
  async #loadMany(clientIds: string[]): Promise<Map<string, WorkloadCredentials>> {
    // Raw knex, one join: this runs on the token endpoint for every credential not cached.
    const rows = await this.#db('workloads as w')
      .join('roles as r', 'r.id', 'w.role_id')
      .join('tenants as t', 't.id', 'w.tenant_id')
      .whereIn('w.client_id', clientIds)
      .select('w.id', 'w.client_id', 'w.tenant_id', 'w.disabled', 'r.permissions', 't.status');
    const found = new Map<string, WorkloadCredentials>();
    if (rows.length === 0) return found;
    const secrets = await this.#db('workload_secrets')
      .whereIn(
        'workload_id',
        rows.map((r) => r.id),
      )
      .andWhere((q) => q.whereNull('valid_until').orWhere('valid_until', '>', new Date()));
    const byWorkload = new Map<string, WorkloadCredentials['secrets']>();
    for (const s of secrets) {
      const list = byWorkload.get(s.workload_id) ?? [];
      list.push({
        hash: Buffer.from(s.secret_hash, 'hex'),
        validUntil: s.valid_until ? new Date(s.valid_until).getTime() : null,
      });
      byWorkload.set(s.workload_id, list);
    }
    const loadedAt = Date.now();
    for (const row of rows) {
      const { permissions } = Role.fromDatabaseJson({ permissions: row.permissions });
      found.set(row.client_id, {
        workloadId: row.id,
        clientId: row.client_id,
        tenantId: row.tenant_id,
        tenantActive: row.status === 'active',
        disabled: row.disabled,
        permissions,
        secrets: byWorkload.get(row.id) ?? [],
        loadedAt,
      });
    }
    return found;
  }
}
