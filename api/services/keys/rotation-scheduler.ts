/**
 * Automatic key rotation. Every API process runs this scheduler; each pass finds
 * the generated, active keys whose `next_rotation_at` has passed and rotates each through the
 * store's rotation (new version, cache invalidation on every instance). Exactly once across any
 * number of processes: the rotation re-reads the key under its row lock (SELECT ... FOR UPDATE)
 * and rotates only if it is still due, so the first process moves the schedule on and every
 * other one finds it no longer due. A crash inside the transaction rolls both back, so a
 * rotation is never lost to a claim without its version. Audited as a rotation by the system.
 * The same pass destroys the keys whose scheduled deletion has come (deletion.ts), by the same
 * row-lock rule: once, by whichever process gets there first.
 */
import type { AppContext, RotationScheduler } from '../../context.ts';
import { tenantPolicy } from '../policies.ts';
import { rotateIfDue } from './store.ts';
import { scheduleUnscheduled } from './settings.ts';
import { sweepDueDeletions } from './deletion.ts';

/** Keys looked at per pass; the rest wait for the next pass. */
const BATCH = 100;
/** The actor of scheduled rotations in the audit log. */
export const SCHEDULER_ACTOR = 'system:scheduler';

/** Creates the scheduler; with `intervalMs` > 0 it runs a pass every interval on an unref'd timer. */
export function startRotationScheduler(ctx: AppContext, intervalMs: number): RotationScheduler {
  let timer: NodeJS.Timeout | null = null;
  let running: Promise<number> | null = null;
  let closed = false;
  const policyPeriod = async (tenantId: string) =>
    (await tenantPolicy(ctx, tenantId)).effective.rotationPeriodDays;

  async function pass(now: Date): Promise<number> {
    await sweepDueDeletions(ctx, now);
    await scheduleUnscheduled(ctx, policyPeriod, BATCH);
    const due = await ctx
      .db('keys')
      .where({ state: 'active', source: 'generated' })
      .where('next_rotation_at', '<=', now)
      .orderBy('next_rotation_at')
      .limit(BATCH)
      .select('tenant_id', 'kid');
    let rotated = 0;
    for (const { tenant_id: tenantId, kid } of due) {
      if (closed) break;
      try {
        const key = await rotateIfDue(ctx, tenantId, kid, now);
        if (!key) continue; // another process rotated it first
        rotated += 1;
        ctx.audit.record({
          tenantId,
          actor: SCHEDULER_ACTOR,
          action: 'key.rotate',
          outcome: 'success',
          target: kid,
          details: { state: key.state, version: key.currentVersion, automatic: true },
        });
      } catch (err) {
        // One key's failure (a full pool, a database hiccup) must not stop the others; it is due again next pass.
        ctx.logger.warn(
          { err: (err as Error).message, tenantId, kid },
          'automatic key rotation failed',
        );
      }
    }
    if (rotated > 0) ctx.logger.info({ rotated }, 'keys rotated on schedule');
    return rotated;
  }

  const runOnce = (now = new Date()): Promise<number> => {
    // Passes never overlap within a process.
    running ??= pass(now).finally(() => {
      running = null;
    });
    return running;
  };

  const tick = () => {
    timer = null;
    runOnce()
      .catch((err: Error) => ctx.logger.warn({ err: err.message }, 'key rotation pass failed'))
      .finally(() => {
        if (!closed) arm();
      });
  };
  const arm = () => {
    timer = setTimeout(tick, intervalMs);
    // The scheduler never keeps a process alive on its own.
    timer.unref();
  };
  if (intervalMs > 0) arm();

  return {
    runOnce,
    async close() {
      closed = true;
      if (timer) clearTimeout(timer);
      timer = null;
      await running?.catch(() => undefined);
    },
  };
}

/**
 * Starts the scheduler of an API process on its context (KEY_ROTATION_CHECK_MS). Called right
 * after createContext, so its closer is the last registered and runs first: no pass starts on a
 * closing database or pool.
 */
export function attachRotationScheduler(ctx: AppContext): RotationScheduler {
  const rotation = startRotationScheduler(ctx, ctx.config.keyRotationCheckMs);
  ctx.closers.add('key rotation scheduler', () => rotation.close());
  ctx.rotation = rotation;
  return rotation;
}
