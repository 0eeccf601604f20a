/**
 * Workload client secrets: random UUIDs (122 bits; the spec gives client_secret as a UUID
 * string) stored only as HMAC-SHA-256 under a server pepper derived from the master key, and
 * compared in constant time. A rotated-out secret keeps working until its `valid_until`.
 */
import { createHmac, createSecretKey, randomUUID, timingSafeEqual } from 'node:crypto';
import type { Knex } from 'knex';
import { Role } from '../../../shared/db/models/identities.ts';
import type { ChangeFeed } from '../../../shared/fanout/change-feed.ts';

const CACHE_TTL_MS = 5_000;

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
  /** Constant-time check against every currently valid secret. */
  matches(creds: WorkloadCredentials, secret: string): boolean;
  /** Drops a cached workload here and, through the change feed, on every instance. */
  invalidate(clientId: string): Promise<void>;
}

/** Creates the secret service over the workloads tables. */
export function createClientSecrets(db: Knex, pepper: Buffer, feed: ChangeFeed): ClientSecrets {
  const cache = new Map<string, WorkloadCredentials>();
  feed.on('client', (c) => cache.delete(c.ref));
  feed.onResync(() => cache.clear());
  // A KeyObject is imported once; a raw Buffer key would be re-imported on every HMAC (~5x slower).
  const pepperKey = createSecretKey(pepper);
  const hash = (secret: string) =>
    createHmac('sha256', pepperKey).update(secret, 'utf8').digest('hex');

  async function load(clientId: string): Promise<WorkloadCredentials | null> {
    // Raw knex, one join: this runs on the token endpoint for every credential not cached.
    const row = await db('workloads as w')
      .join('roles as r', 'r.id', 'w.role_id')
      .join('tenants as t', 't.id', 'w.tenant_id')
      .where('w.client_id', clientId)
      .first('w.id', 'w.client_id', 'w.tenant_id', 'w.disabled', 'r.permissions', 't.status');
    if (!row) return null;
    const secrets = await db('workload_secrets')
      .where({ workload_id: row.id })
      .andWhere((q) => q.whereNull('valid_until').orWhere('valid_until', '>', new Date()));
    const { permissions } = Role.fromDatabaseJson({ permissions: row.permissions });
    return {
      workloadId: row.id,
      clientId: row.client_id,
      tenantId: row.tenant_id,
      tenantActive: row.status === 'active',
      disabled: row.disabled,
      permissions,
      secrets: secrets.map((s) => ({
        hash: Buffer.from(s.secret_hash, 'hex'),
        validUntil: s.valid_until ? new Date(s.valid_until).getTime() : null,
      })),
      loadedAt: Date.now(),
    };
  }

  return {
    generate() {
      const secret = randomUUID();
      return { secret, hash: hash(secret) };
    },
    hash,
    async lookup(clientId) {
      const hit = cache.get(clientId);
      if (hit && Date.now() - hit.loadedAt < CACHE_TTL_MS) return hit;
      const fresh = await load(clientId);
      if (fresh) cache.set(clientId, fresh);
      else cache.delete(clientId);
      return fresh;
    },
    matches(creds, secret) {
      const candidate = Buffer.from(hash(secret), 'hex');
      const now = Date.now();
      let ok = false;
      // Check every secret (no early exit) so timing does not tell which one matched.
      for (const s of creds.secrets) {
        const valid = s.validUntil === null || s.validUntil > now;
        if (timingSafeEqual(candidate, s.hash) && valid) ok = true;
      }
      return ok;
    },
    async invalidate(clientId) {
      cache.delete(clientId);
      await feed.record('client', clientId);
    },
  };
}
