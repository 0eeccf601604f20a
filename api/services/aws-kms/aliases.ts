/**
 * Alias names to kids, per tenant, kept in memory: clients such as the AWS
 * Encryption SDK name their key by alias on every call, and a database read per request is what
 * the hot path must not make. Every instance drops an entry when the change feed carries a change
 * of kind `alias` (ref `<tenantId>:<name>`), written by whoever creates or deletes that alias, and
 * everything on a resync. A lookup begun before a change is never kept after it.
 */
import type { Knex } from 'knex';
import {
  splitTenantRef,
  tenantRef,
  type Change,
  type ChangeFeed,
} from '../../../shared/fanout/change-feed.ts';
import { ChangeFedCache } from '../../../shared/fanout/change-fed-cache.ts';
import type { AppContext } from '../../context.ts';

/** Entries kept; past it the oldest goes first. Unknown names are kept too, so the bound matters. */
const MAX_ENTRIES = 10_000;

/** The alias cache of a process, by `<tenantId>:<name>` (the alias change's ref). */
export const createAliasCache = (db: Knex, feed: ChangeFeed): ChangeFedCache<string> =>
  new ChangeFedCache<string>({
    feed,
    kind: 'alias',
    max: MAX_ENTRIES,
    // A name that is no alias stays so until an alias change names it.
    absentTtlMs: Infinity,
    async load([ref]) {
      const { tenantId, name } = splitTenantRef(ref);
      const row = await db('key_aliases').where({ tenant_id: tenantId, name }).first('kid');
      return new Map(row ? [[ref, row.kid as string]] : []);
    },
  });

/** The kid an alias of the tenant names, or null when it names none. */
export async function aliasTarget(
  ctx: AppContext,
  tenantId: string,
  name: string,
): Promise<string | null> {
  return (await ctx.aliases.get(tenantRef(tenantId, name))) ?? null;
}

/** Tells every instance, this one included, that these aliases of the tenant changed (after the commit). */
export async function aliasesChanged(
  ctx: AppContext,
  tenantId: string,
  names: readonly string[],
): Promise<void> {
  for (const name of names) await ctx.changes.record('alias', tenantRef(tenantId, name));
}

/**
 * As aliasesChanged, for aliases deleted inside `trx`: the changes commit with it; call the
 * returned function after the commit.
 */
export async function aliasesChangedIn(
  ctx: AppContext,
  trx: Knex,
  tenantId: string,
  names: readonly string[],
): Promise<() => void> {
  const changes: Change[] = [];
  for (const name of names)
    changes.push(await ctx.changes.write(trx, 'alias', tenantRef(tenantId, name)));
  return () => {
    for (const c of changes) ctx.changes.announce(c);
  };
}
