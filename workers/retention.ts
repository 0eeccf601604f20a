/**
 * MIGRATION_OBJECT_RETENTION, enforced by the workers: every tenant object (uploads and
 * conversion results, all under `tenants/`) last written longer ago than the retention is
 * deleted. Each worker sweeps on its own timer; several sweeping at once only delete the same
 * objects twice, which the store allows. A sweep never overlaps itself, and a failing store
 * is logged and tried again at the next tick, never fatal.
 */
import type { Logger } from '../shared/logger.ts';
import { TENANTS_PREFIX, type ObjectStore } from '../shared/storage/index.ts';

export interface RetentionSweeper {
  /** One pass now; answers the number of objects deleted. */
  sweep(now?: number): Promise<number>;
  close(): Promise<void>;
}

/** How often to sweep: a tenth of the retention, between a minute and an hour. */
export function sweepIntervalMs(retentionSeconds: number): number {
  return Math.min(3600, Math.max(60, Math.floor(retentionSeconds / 10))) * 1000;
}

/** Starts sweeping `objects` every `intervalMs` (0: no timer, sweep() only). */
export function startRetentionSweeper(
  objects: ObjectStore,
  retentionSeconds: number,
  logger: Logger,
  intervalMs = sweepIntervalMs(retentionSeconds),
): RetentionSweeper {
  let running: Promise<number> | null = null;
  const sweep = (now = Date.now()): Promise<number> => {
    running ??= (async () => {
      const cutoff = now - retentionSeconds * 1000;
      let deleted = 0;
      try {
        for await (const info of objects.list(TENANTS_PREFIX)) {
          const at = info.lastModified?.getTime();
          if (at === undefined || at >= cutoff) continue;
          await objects.delete(info.key);
          deleted++;
        }
        if (deleted)
          logger.info({ deleted, retentionSeconds }, 'deleted objects past their retention');
      } catch (err) {
        logger.warn(
          { err: (err as Error).message, deleted },
          'retention sweep failed; it runs again at the next interval',
        );
      } finally {
        running = null;
      }
      return deleted;
    })();
    return running;
  };
  const timer = intervalMs > 0 ? setInterval(() => void sweep(), intervalMs) : null;
  timer?.unref();
  return {
    sweep,
    async close() {
      if (timer) clearInterval(timer);
      await running;
    },
  };
}
