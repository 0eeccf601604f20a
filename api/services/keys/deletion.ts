/**
 * Scheduled key deletion, as part of the key's own lifecycle (docs/aws-kms.md, "Key states"): a
 * pending deletion is a suspended key whose row carries `deletion_at`. It refuses every
 * operation on every API; resume cancels it (store.ts), revoke settles it (store.ts), and at its
 * date the sweep (or the first AWS read of the key) revokes and archives it, here and only here,
 * under the key's row lock and only if it is still pending. Every change is written to the change
 * feed in its transaction, so every instance's key cache forgets the key at the commit.
 */
import type { Knex } from 'knex';
import type { AppContext } from '../../context.ts';
import { problem } from '../../../shared/errors/index.ts';
import { keyNotFound, nextState } from '../../../shared/keys/lifecycle.ts';
import { SYSTEM_ACTOR } from '../../../shared/audit/actor.ts';
import { withdrawOffersOf } from '../exchange-events.ts';
import { aliasesChangedIn } from '../aws-kms/aliases.ts';

type Row = Record<string, unknown>;

/** True when the key row is pending deletion. */
export const pendingDeletion = (row: Row): boolean =>
  row.state === 'suspended' && row.deletion_at !== null && row.deletion_at !== undefined;

/** Runs `change` on the key's row under its lock; announces the key's change after the commit. */
async function underLock<T>(
  ctx: AppContext,
  tenantId: string,
  kid: string,
  change: (trx: Knex, row: Row) => Promise<{ result: T; after?: Array<() => void> } | null>,
): Promise<T | null> {
  const done = await ctx.db.transaction(async (trx) => {
    const row = await trx('keys').where({ tenant_id: tenantId, kid }).forUpdate().first();
    if (!row) throw keyNotFound(kid);
    const out = await change(trx, row);
    if (!out) return null;
    const announce = await ctx.keys.changedIn(trx, tenantId, kid);
    return { ...out, announce };
  });
  if (!done) return null;
  done.announce();
  for (const f of done.after ?? []) f();
  return done.result;
}

/**
 * Schedules the deletion of an active or suspended key at `deleteAt`: the key is suspended (its
 * pending exchange offers withdrawn) and refuses every operation until then. Of two concurrent
 * requests, the second finds the key pending and is refused (409 invalid-transition).
 */
export async function scheduleDeletion(
  ctx: AppContext,
  tenantId: string,
  kid: string,
  deleteAt: Date,
  actor: string,
): Promise<Row> {
  return (await underLock(ctx, tenantId, kid, async (trx, row) => {
    if (pendingDeletion(row))
      throw problem('invalid_transition', `key ${kid} is already pending deletion`, {
        details: { kid, state: row.state, deletionDate: new Date(row.deletion_at as string) },
      });
    if (row.state !== 'suspended') nextState(kid, row.state as never, 'suspend');
    const now = new Date();
    const [updated] = await trx('keys')
      .where({ id: row.id })
      .update({
        state: 'suspended',
        deletion_at: deleteAt,
        deletion_requested_at: now,
        deletion_requested_by: actor,
        updated_at: now,
      })
      .returning('*');
    const withdrawn =
      row.state === 'active'
        ? await withdrawOffersOf(ctx, trx, { tenantId, kid, keyState: 'suspended', actor })
        : undefined;
    return { result: updated as Row, after: withdrawn ? [withdrawn] : [] };
  }))!;
}

/** True when the row's pending deletion has come by `now`. */
const dueBy = (row: Row, now: Date): boolean =>
  pendingDeletion(row) && new Date(row.deletion_at as string) <= now;

/**
 * Cancels a pending deletion; the key stays suspended (as AWS KMS's CancelKeyDeletion). A
 * deletion whose date has come is not cancelled: the key is destroyed and named no more.
 */
export async function cancelDeletion(ctx: AppContext, tenantId: string, kid: string): Promise<Row> {
  const cancelled = await underLock(ctx, tenantId, kid, async (trx, row) => {
    if (dueBy(row, new Date())) return null;
    if (!pendingDeletion(row))
      throw problem('invalid_transition', `key ${kid} is not pending deletion`, {
        details: { kid, state: row.state },
      });
    const [updated] = await trx('keys')
      .where({ id: row.id })
      .update({
        deletion_at: null,
        deletion_requested_at: null,
        deletion_requested_by: null,
        updated_at: new Date(),
      })
      .returning('*');
    return { result: updated as Row };
  });
  if (cancelled) return cancelled;
  await destroyIfDue(ctx, tenantId, kid);
  throw keyNotFound(kid);
}

/**
 * Destroys the key if it is still pending deletion and its date has come by `now`: revoked and
 * archived in one transaction, its aliases deleted, both steps audited as the system's acts on
 * behalf of whoever scheduled the deletion. Answers whether it destroyed the key.
 */
export async function destroyIfDue(
  ctx: AppContext,
  tenantId: string,
  kid: string,
  now = new Date(),
): Promise<boolean> {
  const destroyed = await underLock(ctx, tenantId, kid, async (trx, row) => {
    if (!dueBy(row, now)) return null;
    const revoked = nextState(kid, row.state as never, 'revoke');
    const archived = nextState(kid, revoked, 'archive');
    await trx('keys').where({ id: row.id }).update({
      state: archived,
      deletion_at: null,
      deletion_requested_at: null,
      deletion_requested_by: null,
      updated_at: now,
    });
    const names = (
      await trx('key_aliases').where({ tenant_id: tenantId, kid }).delete().returning('name')
    ).map((r: { name: string }) => r.name);
    const aliases = await aliasesChangedIn(ctx, trx, tenantId, names);
    const details = {
      reason: 'scheduled deletion',
      requestedBy: row.deletion_requested_by,
      requestedAt: row.deletion_requested_at
        ? new Date(row.deletion_requested_at as string).toISOString()
        : null,
      deletionDate: new Date(row.deletion_at as string).toISOString(),
      ...(names.length > 0 ? { aliasesDeleted: names } : {}),
    };
    const audit = () => {
      for (const [action, state] of [
        ['key.revoke', revoked],
        ['key.archive', archived],
      ] as const)
        ctx.audit.record({
          tenantId,
          actor: SYSTEM_ACTOR,
          action,
          outcome: 'success',
          target: kid,
          details: { ...details, state },
        });
    };
    return { result: true, after: [aliases, audit] };
  });
  return destroyed === true;
}

/** Keys looked at per sweep; the rest wait for the next one. */
const SWEEP_BATCH = 100;

/** Destroys the keys, of any tenant, whose deletion date has come; answers how many. */
export async function sweepDueDeletions(ctx: AppContext, now = new Date()): Promise<number> {
  const due = await ctx
    .db('keys')
    .where('state', 'suspended')
    .where('deletion_at', '<=', now)
    .orderBy('deletion_at')
    .limit(SWEEP_BATCH)
    .select('tenant_id', 'kid');
  let destroyed = 0;
  for (const { tenant_id: tenantId, kid } of due) {
    try {
      if (await destroyIfDue(ctx, tenantId, kid, now)) destroyed += 1;
    } catch (err) {
      // One key's failure must not stop the others; it is still due at the next sweep.
      ctx.logger.warn({ err: (err as Error).message, tenantId, kid }, 'key deletion failed');
    }
  }
  if (destroyed > 0) ctx.logger.info({ destroyed }, 'keys destroyed at their deletion date');
  return destroyed;
}
