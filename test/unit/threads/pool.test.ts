import { createPool } from '../../../api/threads/pool.ts';
import { AppError } from '../../../shared/errors/index.ts';

describe('worker pool', () => {
  it('when the queue is full, then callers get a 503 service-busy problem with Retry-After, and queued work still completes', async () => {
    const pool = createPool({ threads: 1, maxQueue: 2 });
    try {
      const runs = Array.from({ length: 8 }, () =>
        pool.run<string>('hashPassword', { password: 'pw' }).then(
          (h) => ({ ok: h }),
          (err) => ({ err }),
        ),
      );
      const outcomes = await Promise.all(runs);
      const refused = outcomes.filter((o): o is { err: AppError } => 'err' in o);
      expect(refused.length).toBeGreaterThan(0);
      expect(refused[0].err).toBeInstanceOf(AppError);
      expect(refused[0].err).toMatchObject({
        status: 503,
        slug: 'service-busy',
        headers: { 'Retry-After': '1' },
      });
      expect(outcomes.filter((o) => 'ok' in o).length).toBeGreaterThanOrEqual(3);
    } finally {
      await pool.close();
    }
  });

  it('when a task throws a problem as plain data, then it is rebuilt with its code and status', async () => {
    const pool = createPool({ threads: 1, maxQueue: 10 });
    try {
      await expect(
        pool.run('parseKeystoreTask', { data: new Uint8Array([1, 2, 3]) }),
      ).rejects.toMatchObject({ status: 400, code: expect.stringMatching(/keystore/) });
    } finally {
      await pool.close();
    }
  });
});
