/**
 * The Vault Transit mounts of every tenant (its policy's `vaultTransitMounts`), held in memory so
 * a Transit request never reads the database for them. Only tenants that name their own mounts
 * have an entry; every other tenant serves Vault's default, `transit`. The map is read at start
 * and again on every tenant change of the change feed (shared/fanout/change-feed.ts), which a
 * change of the overrides writes with them: every instance sees new mounts within the feed's
 * delay, without a restart.
 */
import type { Knex } from 'knex';
import type { Logger } from '../../../shared/logger.ts';
import type { ChangeFeed } from '../../../shared/fanout/change-feed.ts';
import { Tenant } from '../../../shared/db/models/tenants.ts';
import { DEFAULT_TRANSIT_MOUNT, transitMountsOf } from '../../../shared/policy.ts';

export interface TransitMounts {
  /** Whether the tenant's Transit API answers at /v1/<mount>/. */
  serves(tenantId: string, mount: string): boolean;
  /** Reads every tenant's mounts now; on a failed read, retries every second until one succeeds. */
  refresh(): Promise<void>;
  close(): Promise<void>;
}

/** Loads the tenants' mounts and follows the change feed's tenant changes. */
export async function createTransitMounts(
  db: Knex,
  logger: Logger,
  feed: ChangeFeed,
): Promise<TransitMounts> {
  let mounts = new Map<string, ReadonlySet<string>>();
  // Reads can overlap (a change arriving while one is under way): only the newest one's answer counts.
  let generation = 0;
  const load = async () => {
    const mine = ++generation;
    const rows = await Tenant.query(db)
      .whereRaw("policy_overrides -> 'vaultTransitMounts' is not null")
      .select('id', 'policy_overrides');
    const next = new Map<string, ReadonlySet<string>>();
    for (const row of rows) {
      const named = transitMountsOf(row.policy_overrides);
      if (named.length !== 1 || named[0] !== DEFAULT_TRANSIT_MOUNT)
        next.set(row.id, new Set(named));
    }
    if (mine === generation) mounts = next;
  };
  // A change counts as applied: a failed read is retried until it succeeds, so a removed mount
  // does not go on answering until some later change comes along.
  let retry: NodeJS.Timeout | null = null;
  let closed = false;
  const refresh = async () => {
    if (retry) clearTimeout(retry);
    retry = null;
    try {
      await load();
    } catch (err) {
      if (closed) return;
      logger.warn(
        { err: (err as Error).message },
        "reading the tenants' Vault Transit mounts failed; retrying in a second",
      );
      retry = setTimeout(() => void refresh(), 1000);
      retry.unref();
    }
  };
  await load();

  feed.on('tenant', () => void refresh());
  feed.onResync(load);

  return {
    serves: (tenantId, mount) =>
      mounts.get(tenantId)?.has(mount) ?? mount === DEFAULT_TRANSIT_MOUNT,
    refresh,
    async close() {
      closed = true;
      if (retry) clearTimeout(retry);
      retry = null;
    },
  };
}
