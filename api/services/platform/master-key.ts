/**
 * The master keyring's status and its online rewrap, for the platform routes and
 * the CLI: which ids the keyring holds, how many sealed items each still seals, and the
 * progress of this instance's rewrap.
 */
import type { AppContext } from '../../context.ts';
import { countSealedById } from '../../../shared/keys/sealed-items.ts';
import type { RewrapProgress } from '../../../shared/keys/rewrap.ts';

/** The answer of GET /api/v3/admin/platform/master-key. */
export interface MasterKeyStatus {
  /** The keyring's ids, newest first, with the items each seals. */
  keyring: Array<{ id: string; newest: boolean; items: number }>;
  /** Items sealed before the keyring existed (they open under the key they were made with). */
  unversioned: number;
  /** Ids the database names that this instance's keyring does not hold. */
  unknown: Array<{ id: string; items: number }>;
  /** True when every item is sealed under the newest id: the older ids may be removed. */
  complete: boolean;
  rewrap: RewrapProgress;
}

/** Counts the sealed items by id and reads this instance's rewrap progress. */
export async function masterKeyStatus(ctx: AppContext): Promise<MasterKeyStatus> {
  // The progress is read before the counts: a run that is done has committed every batch, so the
  // counts that follow include its work. Read after, a run ending during the count query would
  // answer "done" beside counts from before its last batch.
  const rewrap = ctx.rewrap.progress();
  const counts = await countSealedById(ctx.db);
  const ids = ctx.masterKey.ids;
  const keyring = ids.map((id, i) => ({ id, newest: i === 0, items: counts.get(id) ?? 0 }));
  const unknown = [...counts]
    .filter(([id]) => id !== '' && !ids.includes(id))
    .map(([id, items]) => ({ id, items }));
  const unversioned = counts.get('') ?? 0;
  const behind = keyring.slice(1).reduce((n, k) => n + k.items, 0) + unversioned;
  return {
    keyring,
    unversioned,
    unknown,
    complete: behind === 0 && unknown.length === 0,
    rewrap,
  };
}

/** Starts this instance's rewrap (or answers the one running), audited at start and at its end. */
export function startRewrap(ctx: AppContext, tenantId: string, actor: string): RewrapProgress {
  const before = ctx.rewrap.progress();
  const progress = ctx.rewrap.start((done) =>
    ctx.audit.record({
      tenantId,
      actor,
      action: 'platform.master-key.rewrap',
      outcome: done.state === 'done' ? 'success' : 'failure',
      target: done.targetId,
      details: {
        state: done.state,
        rewrapped: done.rewrapped,
        raced: done.raced,
        unopenable: done.unopenable,
      },
    }),
  );
  if (before.state !== 'running')
    ctx.audit.record({
      tenantId,
      actor,
      action: 'platform.master-key.rewrap-start',
      outcome: 'success',
      target: ctx.masterKey.newestId,
    });
  return progress;
}
