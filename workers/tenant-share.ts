/**
 * A tenant's share of a worker process: at most `perTenant` of its jobs run at once here, so one
 * tenant's files never hold every slot while another tenant's job waits behind them. A job taken
 * past its tenant's share goes back to the queue as delayed for a moment (`job.moveToDelayed` and
 * DelayedError, BullMQ's own way to put a job back without spending an attempt), and the slot
 * takes the next job. BullMQ Pro's groups do this inside Redis; the open-source BullMQ has no
 * per-key concurrency, so the count is kept here, per process. A job is put back only when
 * another tenant has a job waiting (`othersWaiting`): a tenant alone on the queue keeps every slot,
 * so a one-tenant migration loses no throughput to the share. docs/batch-migration.md
 * ("Sharing the workers between tenants") explains the choice.
 */
import { DelayedError, type Job } from 'bullmq';

/** The processor BullMQ calls. */
export type Processor<D, R> = (job: Job<D, R>, token?: string, signal?: AbortSignal) => Promise<R>;

export interface TenantShareOptions {
  /** Jobs of one tenant this process runs at once. */
  perTenant: number;
  /** How long a job past its tenant's share waits before it is offered again, in ms. */
  delayMs: number;
  /**
   * Whether a job of a tenant other than `tenantId` is waiting; asked only when a job is past its
   * tenant's share. Without it, a job past its share is always put back.
   */
  othersWaiting?: (tenantId: string) => Promise<boolean>;
  /** Told each time a job is put back (metrics, logs). */
  onDeferred?: (tenantId: string, jobId: string | undefined) => void;
}

/** The per-tenant share of WORKER_CONCURRENCY: 0 means all slots but one, at least 1. */
export function tenantShare(concurrency: number, configured: number): number {
  return configured > 0 ? configured : Math.max(1, concurrency - 1);
}

/** Wraps `processor` so that at most `perTenant` jobs of one tenant run in it at once. */
export function withTenantShare<D extends { tenantId: string }, R>(
  processor: Processor<D, R>,
  o: TenantShareOptions,
): Processor<D, R> & { running(tenantId: string): number } {
  const running = new Map<string, number>();
  const wrapped = async (job: Job<D, R>, token?: string, signal?: AbortSignal): Promise<R> => {
    const tenant = job.data.tenantId;
    const now = running.get(tenant) ?? 0;
    if (now >= o.perTenant && (o.othersWaiting === undefined || (await o.othersWaiting(tenant)))) {
      // A little jitter, so that a tenant's many waiting jobs do not all come back at once.
      await job.moveToDelayed(
        Date.now() + o.delayMs + Math.floor(Math.random() * o.delayMs),
        token,
      );
      o.onDeferred?.(tenant, job.id);
      throw new DelayedError();
    }
    running.set(tenant, now + 1);
    try {
      return await processor(job, token, signal);
    } finally {
      const left = (running.get(tenant) ?? 1) - 1;
      if (left > 0) running.set(tenant, left);
      else running.delete(tenant);
    }
  };
  return Object.assign(wrapped, { running: (tenantId: string) => running.get(tenantId) ?? 0 });
}
