import { WORK_COSTS, WorkBudget } from '../../../shared/keys/work-budget.ts';
import { createExpensiveWork } from '../../../api/threads/expensive.ts';
import type { WorkPool } from '../../../api/threads/pool.ts';
import type { AppError } from '../../../shared/errors/index.ts';

/** A pool whose tasks end when the test says so: what started, and a way to finish each. */
function heldPool() {
  const started: Array<{ task: string; finish(): void }> = [];
  const pool = {
    run: (task: string) =>
      new Promise((resolve) => started.push({ task, finish: () => resolve(task) })),
  } as unknown as WorkPool;
  return { pool, started };
}

const settled = <T>(p: Promise<T>) =>
  p.then(
    (value) => ({ value }),
    (err: AppError) => ({ err }),
  );
const tick = () => new Promise((r) => setImmediate(r));

describe('the budget of expensive work', () => {
  it('when a principal spends past its units, then 429 rate-limited with Retry-After, and another principal still spends', async () => {
    const budget = new WorkBudget({ units: 2500, windowSeconds: 60 });
    await budget.spend('workload:a', 'key-generation', WORK_COSTS.rsa(4096));
    await budget.spend('workload:a', 'key-generation', WORK_COSTS.rsa(4096));
    const refused = await settled(budget.spend('workload:a', 'key-generation', 1000));
    expect(refused).toMatchObject({
      err: { code: 'rate_limited', status: 429, headers: { 'Retry-After': expect.any(String) } },
    });
    await budget.spend('workload:b', 'key-generation', 1000);
  });

  it('when one piece of work costs more than the whole budget, then it is refused at once', async () => {
    const budget = new WorkBudget({ units: 50, windowSeconds: 60 });
    expect(
      await settled(budget.spend('w', 'key-derivation', WORK_COSTS.pbkdf2(100_000))),
    ).toMatchObject({ err: { status: 429 } });
  });

  it('when the costs are read, then derivation grows with iterations and RSA with its size', () => {
    expect(WORK_COSTS.pbkdf2(2048)).toBe(3);
    expect(WORK_COSTS.pbkdf2(100_000)).toBe(100);
    expect(WORK_COSTS.rsa(2048)).toBeLessThan(WORK_COSTS.rsa(3072));
    expect(WORK_COSTS.rsa(3072)).toBeLessThan(WORK_COSTS.rsa(4096));
  });
});

describe('the place of expensive work', () => {
  const order = (principal = 'workload:a', abandoned?: () => boolean) => ({
    principal,
    kind: 'key-generation' as const,
    cost: 100,
    abandoned,
  });

  it('when more tasks come than threads and queue hold, then 503 service-busy, and the refused cost comes back', async () => {
    const { pool, started } = heldPool();
    const budget = new WorkBudget({ units: 400, windowSeconds: 60 });
    const place = createExpensiveWork({ pool, budget, threads: 1, maxQueue: 2 });
    const runs = [1, 2, 3].map(() => settled(place.run('t', {}, order())));
    await tick();
    const fourth = await settled(place.run('t', {}, order()));
    expect(fourth).toMatchObject({ err: { code: 'pool_busy', status: 503 } });
    expect([place.running(), place.waiting(), started.length]).toEqual([1, 2, 1]);
    // 300 of 400 units are spent by the three admitted tasks: the refused one's 100 came back.
    await budget.spend('workload:a', 'key-generation', 100);
    for (let i = 0; i < 3; i++) {
      started[i].finish();
      await tick();
      await tick();
    }
    expect((await Promise.all(runs)).map((r) => 'value' in r)).toEqual([true, true, true]);
    expect(place.running()).toBe(0);
  });

  it('when a waiting task’s client leaves, then it never starts, its cost comes back, and the next one runs', async () => {
    const { pool, started } = heldPool();
    const budget = new WorkBudget({ units: 300, windowSeconds: 60 });
    const place = createExpensiveWork({ pool, budget, threads: 1, maxQueue: 4 });
    let gone = false;
    const first = settled(place.run('first', {}, order()));
    const left = settled(
      place.run(
        'left',
        {},
        order('workload:a', () => gone),
      ),
    );
    const stays = settled(place.run('stays', {}, order('workload:b')));
    await tick();
    gone = true;
    started[0].finish();
    expect(await left).toMatchObject({ err: { status: 400 } });
    await tick();
    expect(started.map((s) => s.task)).toEqual(['first', 'stays']);
    expect(place.dropped()).toBe(1);
    started[1].finish();
    expect(await first).toEqual({ value: 'first' });
    expect(await stays).toEqual({ value: 'stays' });
    // workload:a spent 100 for `first`; the dropped task's 100 came back, so 200 remain.
    await budget.spend('workload:a', 'key-generation', 200);
  });

  it('when work is the system’s (no principal), then it spends no budget', async () => {
    const { pool, started } = heldPool();
    const budget = new WorkBudget({ units: 1, windowSeconds: 60 });
    const place = createExpensiveWork({ pool, budget, threads: 1, maxQueue: 1 });
    const run = place.run('rotation', {}, { principal: '', kind: 'key-generation', cost: 1000 });
    await tick();
    started[0].finish();
    expect(await run).toBe('rotation');
  });
});
