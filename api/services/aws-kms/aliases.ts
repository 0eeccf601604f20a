/**
 * Alias names to kids, per tenant, kept in memory: clients such as the AWS
 * Encryption SDK name their key by alias on every call, and a database read per request is what
 * the hot path must not make. Every instance drops an entry when the change feed carries a change
 * of kind `alias` (ref `<tenantId>:<name>`), written by whoever creates or deletes that alias, and
 * everything on a resync. A lookup begun before a change is never kept after it.
 */
import type { Knex } from 'knex';
import type { Change } from '../../../shared/fanout/change-feed.ts';
import type { AppContext } from '../../context.ts';

/** Entries kept; past it the oldest goes first. Unknown names are kept too, so the bound matters. */
const MAX_ENTRIES = 10_000;

interface AliasCache {
  kids: Map<string, Promise<string | null>>;
  generation: number;
}

const caches = new WeakMap<AppContext, AliasCache>();

function cacheOf(ctx: AppContext): AliasCache {
  let cache = caches.get(ctx);
  if (!cache) {
    const c: AliasCache = { kids: new Map(), generation: 0 };
    ctx.changes.on('alias', (change) => {
      c.generation += 1;
      c.kids.delete(change.ref);
    });
    ctx.changes.onResync(() => {
      c.generation += 1;
      c.kids.clear();
    });
    caches.set(ctx, c);
    cache = c;
  }
  return cache;
}

/** The kid an alias of the tenant names, or null when it names none. */
export function aliasTarget(
  ctx: AppContext,
  tenantId: string,
  name: string,
): Promise<string | null> {
  const cache = cacheOf(ctx);
  const ref = `${tenantId}:${name}`;
  const hit = cache.kids.get(ref);
  if (hit) return hit;
  const startedAt = cache.generation;
  const load = ctx
    .db('key_aliases')
    .where({ tenant_id: tenantId, name })
    .first('kid')
    .then((row: { kid: string } | undefined) => row?.kid ?? null);
  if (cache.kids.size >= MAX_ENTRIES) cache.kids.delete(cache.kids.keys().next().value as string);
  cache.kids.set(ref, load);
  const forget = () => {
    if (cache.kids.get(ref) === load) cache.kids.delete(ref);
  };
  load.then(() => {
    if (cache.generation !== startedAt) forget();
  }, forget);
  return load;
}

/** Tells every instance, this one included, that these aliases of the tenant changed (after the commit). */
export async function aliasesChanged(
  ctx: AppContext,
  tenantId: string,
  names: readonly string[],
): Promise<void> {
  for (const name of names) await ctx.changes.record('alias', `${tenantId}:${name}`);
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
    changes.push(await ctx.changes.write(trx, 'alias', `${tenantId}:${name}`));
  return () => {
    for (const c of changes) ctx.changes.announce(c);
  };
}
