/**
 * Workload client secrets: random UUIDs (122 bits; the spec gives client_secret as a UUID
 * string) stored only as HMAC-SHA-256 under a server pepper derived from the master key, and
 * compared in constant time. A rotated-out secret keeps working until its `valid_until`.
 */
import { createHmac, createSecretKey, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import type { Knex } from 'knex';
import { Role } from '../../../shared/db/models/identities.ts';
import type { ChangeFeed } from '../../../shared/fanout/change-feed.ts';

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
 * Client ids that name no workload, remembered CACHE_TTL_MS as a known one is (at most this many,
 * the oldest forgotten first): an unknown id read the database on every attempt, twice per
 * request, while a known one came from the cache, so an id answered three times slower when it
 * did not exist. A workload's client id is a random UUID made with it, so none is created while
 * remembered as unknown; any change to a client forgets it here as well.
 */
const UNKNOWN_MAX = 10_000;

type Deferred = PromiseWithResolvers<WorkloadCredentials | null>;

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

export interface ClientSecrets {
  /** Generates a secret and its stored hash. */
  generate(): { secret: string; hash: string };
  hash(secret: string): string;
  /** Credentials by client_id (cached 5 s; invalidated on change across instances). */
  lookup(clientId: string): Promise<WorkloadCredentials | null>;
  /**
   * Constant-time check against every currently valid secret; with no workload (an unknown
   * client id), the same work against a dummy secret, and false.
   */
  matches(creds: WorkloadCredentials | null, secret: string): boolean;
  /** Drops a cached workload here and, through the change feed, on every instance. */
  invalidate(clientId: string): Promise<void>;
}

/** Creates the secret service over the workloads tables. */
export function createClientSecrets(db: Knex, pepper: Buffer, feed: ChangeFeed): ClientSecrets {
  const cache = new Map<string, WorkloadCredentials>();
  /** Client ids found to name no workload, and when (insertion order = age). */
  const unknown = new Map<string, number>();
  const loading = new Map<string, Promise<WorkloadCredentials | null>>();
  /** Clients looked up since their entry was loaded (JOIN_AFTER_MS). */
  const used = new Set<string>();
  // Bumped by every change: a load that began before one must not cache what it read.
  let generation = 0;
  // A load in flight read the old state: later lookups must start their own.
  const forget = (clientId: string) => {
    generation += 1;
    cache.delete(clientId);
    unknown.delete(clientId);
    loading.delete(clientId);
    used.delete(clientId);
  };
  feed.on('client', (c) => forget(c.ref));
  feed.onResync(() => {
    generation += 1;
    cache.clear();
    unknown.clear();
    loading.clear();
    used.clear();
  });
  // A KeyObject is imported once; a raw Buffer key would be re-imported on every HMAC (~5x slower).
  const pepperKey = createSecretKey(pepper);
  const hash = (secret: string) =>
    createHmac('sha256', pepperKey).update(secret, 'utf8').digest('hex');

  /** Reads the workloads of `clientIds` (at most LOAD_BATCH) in two queries, whatever their number. */
  async function loadMany(clientIds: string[]): Promise<Map<string, WorkloadCredentials>> {
    // Raw knex, one join: this runs on the token endpoint for every credential not cached.
    const rows = await db('workloads as w')
      .join('roles as r', 'r.id', 'w.role_id')
      .join('tenants as t', 't.id', 'w.tenant_id')
      .whereIn('w.client_id', clientIds)
      .select('w.id', 'w.client_id', 'w.tenant_id', 'w.disabled', 'r.permissions', 't.status');
    const found = new Map<string, WorkloadCredentials>();
    if (rows.length === 0) return found;
    const secrets = await db('workload_secrets')
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

  /**
   * The reads waiting for their turn, by client: one batch is read at a time, and whatever
   * lookups ask for meanwhile is read together after it. Reading each workload on its
   * own cost two round trips per client every REFRESH_AFTER_MS, all due together since the
   * entries were loaded together: at 64 busy clients, 128 queries in a burst every 4 s, which on
   * the embedded database (one backend, one connection) took 0.4 to 2.3 s to drain under load,
   * long enough for entries to lapse and their requests to wait on the database.
   */
  let queued = new Map<string, Deferred>();
  let reading = false;
  let scheduled = false;

  function schedule(): void {
    if (reading || scheduled) return;
    scheduled = true;
    setImmediate(() => {
      scheduled = false;
      void readQueued();
    });
  }

  async function readQueued(): Promise<void> {
    if (queued.size === 0) return;
    reading = true;
    joinNearlyDue();
    const batch = [...queued].slice(0, LOAD_BATCH);
    if (batch.length === queued.size) queued = new Map();
    else for (const [clientId] of batch) queued.delete(clientId);
    // A change after this point must win over what this read returns.
    const startedAt = generation;
    try {
      const found = await loadMany(batch.map(([clientId]) => clientId));
      for (const [clientId, wait] of batch) {
        const fresh = found.get(clientId) ?? null;
        if (generation === startedAt) {
          if (fresh) cache.set(clientId, fresh);
          else {
            cache.delete(clientId);
            rememberUnknown(clientId);
          }
          used.delete(clientId);
        }
        wait.resolve(fresh);
      }
    } catch (err) {
      for (const [, wait] of batch) wait.reject(err);
    } finally {
      reading = false;
      if (queued.size > 0) schedule();
    }
  }

  function rememberUnknown(clientId: string): void {
    unknown.delete(clientId);
    if (unknown.size >= UNKNOWN_MAX) unknown.delete(unknown.keys().next().value as string);
    unknown.set(clientId, Date.now());
  }

  /** Queues the entries in use from JOIN_AFTER_MS of age, up to a full batch. */
  function joinNearlyDue(): void {
    const now = Date.now();
    for (const clientId of used) {
      if (queued.size >= LOAD_BATCH) return;
      const hit = cache.get(clientId);
      if (!hit) used.delete(clientId);
      // A failed read is left to the next lookup past the TTL, which reports it.
      else if (now - hit.loadedAt >= JOIN_AFTER_MS) reload(clientId).catch(() => undefined);
    }
  }

  /** One read per client at a time; what it read is cached unless a change came meanwhile. */
  function reload(clientId: string): Promise<WorkloadCredentials | null> {
    let pending = loading.get(clientId);
    if (!pending) {
      // Still waiting for its batch (a change forgot its promise): that read comes after the change.
      let wait = queued.get(clientId);
      if (!wait) {
        wait = Promise.withResolvers<WorkloadCredentials | null>();
        queued.set(clientId, wait);
        schedule();
      }
      const own: Promise<WorkloadCredentials | null> = wait.promise.finally(() => {
        if (loading.get(clientId) === own) loading.delete(clientId);
      });
      pending = own;
      loading.set(clientId, pending);
    }
    return pending;
  }

  return {
    generate() {
      const secret = randomUUID();
      return { secret, hash: hash(secret) };
    },
    hash,
    async lookup(clientId) {
      const hit = cache.get(clientId);
      if (!hit) {
        const seen = unknown.get(clientId);
        if (seen !== undefined && Date.now() - seen < CACHE_TTL_MS) return null;
      }
      const age = hit ? Date.now() - hit.loadedAt : Infinity;
      if (age < CACHE_TTL_MS) {
        // A failed background reload is left to the next lookup past the TTL, which reports it.
        if (age >= REFRESH_AFTER_MS) reload(clientId).catch(() => undefined);
        else used.add(clientId);
        return hit!;
      }
      return reload(clientId);
    },
    matches(creds, secret) {
      const candidate = Buffer.from(hash(secret), 'hex');
      const now = Date.now();
      let ok = false;
      // Check every secret (no early exit) so timing does not tell which one matched.
      for (const s of creds?.secrets ?? DUMMY_SECRETS) {
        const valid = s.validUntil === null || s.validUntil > now;
        if (timingSafeEqual(candidate, s.hash) && valid) ok = true;
      }
      return ok && creds !== null;
    },
    async invalidate(clientId) {
      forget(clientId);
      await feed.record('client', clientId);
    },
  };
}
