/**
 * A tenant's share of a worker process: past it, a job goes back to the queue as delayed (no
 * attempt spent) and the slot is free for another tenant's job; a finished job frees its share.
 */
import { DelayedError, type Job } from 'bullmq';
import { tenantShare, withTenantShare } from '../../../workers/tenant-share.ts';

interface Data {
  tenantId: string;
}

function fakeJob(id: string, tenantId: string) {
  const moved: number[] = [];
  const job = {
    id,
    data: { tenantId },
    moveToDelayed: async (ts: number) => void moved.push(ts),
  } as unknown as Job<Data, string>;
  return { job, moved };
}

describe("a tenant's share of a worker process", () => {
  it('when WORKER_TENANT_CONCURRENCY is 0, then the share is all slots but one, at least one', () => {
    expect(tenantShare(2, 0)).toBe(1);
    expect(tenantShare(8, 0)).toBe(7);
    expect(tenantShare(1, 0)).toBe(1);
    expect(tenantShare(8, 3)).toBe(3);
  });

  it("when a tenant's jobs fill its share, then its next job is put back delayed and another tenant's job runs at once", async () => {
    const release: Array<() => void> = [];
    const ran: string[] = [];
    const deferred: string[] = [];
    const processor = withTenantShare<Data, string>(
      (job) =>
        new Promise<string>((resolve) => {
          ran.push(job.id!);
          release.push(() => resolve(job.id!));
        }),
      { perTenant: 1, delayMs: 1000, onDeferred: (_t, id) => deferred.push(id!) },
    );
    const hostile1 = fakeJob('h1', 'tenant-a');
    const hostile2 = fakeJob('h2', 'tenant-a');
    const other = fakeJob('o1', 'tenant-b');

    const first = processor(hostile1.job, 'token');
    const before = Date.now();
    await expect(processor(hostile2.job, 'token')).rejects.toBeInstanceOf(DelayedError);
    expect(hostile2.moved).toHaveLength(1);
    expect(hostile2.moved[0]).toBeGreaterThanOrEqual(before + 1000);
    expect(hostile2.moved[0]).toBeLessThan(Date.now() + 2000);
    expect(deferred).toEqual(['h2']);

    const second = processor(other.job, 'token');
    expect(ran).toEqual(['h1', 'o1']);
    expect(processor.running('tenant-a')).toBe(1);

    release.forEach((r) => r());
    await expect(Promise.all([first, second])).resolves.toEqual(['h1', 'o1']);
    expect(processor.running('tenant-a')).toBe(0);

    // Its share free again, the tenant's next job runs.
    const third = processor(hostile2.job, 'token');
    expect(ran).toEqual(['h1', 'o1', 'h2']);
    release[2]();
    await expect(third).resolves.toBe('h2');
  });

  it('when a job fails, then its share is freed all the same', async () => {
    const processor = withTenantShare<Data, string>(
      async () => {
        throw new Error('bad input');
      },
      { perTenant: 1, delayMs: 1000 },
    );
    await expect(processor(fakeJob('x', 'tenant-a').job)).rejects.toThrow('bad input');
    expect(processor.running('tenant-a')).toBe(0);
  });
});

describe('when only the same tenant is waiting', () => {
  it('then a job past its share runs at once instead of being put back: a tenant alone keeps every slot', async () => {
    const asked: string[] = [];
    const processor = withTenantShare<Data, string>(async (job) => job.id!, {
      perTenant: 1,
      delayMs: 1000,
      othersWaiting: async (tenantId) => {
        asked.push(tenantId);
        return false;
      },
    });
    let release!: () => void;
    const held = withTenantShare<Data, string>(
      (job) =>
        job.id === 'a1'
          ? new Promise<string>((resolve) => (release = () => resolve(job.id!)))
          : Promise.resolve(job.id!),
      { perTenant: 1, delayMs: 1000, othersWaiting: async () => false },
    );
    const first = held(fakeJob('a1', 'tenant-a').job, 'token');
    const second = fakeJob('a2', 'tenant-a');
    await expect(held(second.job, 'token')).resolves.toBe('a2');
    expect(second.moved).toHaveLength(0);
    release();
    await expect(first).resolves.toBe('a1');
    await expect(processor(fakeJob('b1', 'tenant-b').job)).resolves.toBe('b1');
    expect(asked).toEqual([]);
  });

  it("then a job past its share is put back as soon as another tenant's job waits", async () => {
    let release!: () => void;
    const held = withTenantShare<Data, string>(
      (job) => new Promise<string>((resolve) => (release = () => resolve(job.id!))),
      { perTenant: 1, delayMs: 1000, othersWaiting: async (t) => t === 'tenant-a' },
    );
    const first = held(fakeJob('a1', 'tenant-a').job, 'token');
    const second = fakeJob('a2', 'tenant-a');
    await expect(held(second.job, 'token')).rejects.toBeInstanceOf(DelayedError);
    expect(second.moved).toHaveLength(1);
    release();
    await first;
  });
});
