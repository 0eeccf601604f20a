/**
 * What the benches of the jobs path share (jobs, archive-batch): a database created and dropped
 * on the Postgres server, the run's queue keys removed from the shared Redis, worker child
 * processes (`node workers/worker.ts`) waited on until ready, and a bounded pool of async calls.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import knexFactory from 'knex';
import { Redis } from 'ioredis';

const root = new URL('../..', import.meta.url).pathname;

/** Removes the keys of queue prefix `queuePrefix` from the (shared) Redis. */
export async function dropQueueKeys(redisUrl: string, queuePrefix: string): Promise<void> {
  const redis = new Redis(redisUrl);
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${queuePrefix}:*`, 'COUNT', 1000);
      if (keys.length > 0) await redis.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}

/** Admin calls against the database server `pgBase` (create and drop a bench database). */
export async function pgAdmin(pgBase: string, sql: string): Promise<void> {
  const k = knexFactory({ client: 'pg', connection: pgBase, pool: { min: 0, max: 1 } });
  try {
    await k.raw(sql);
  } finally {
    await k.destroy();
  }
}

/** Spawns a worker process and waits for its ready line; `pid` reads its CPU from /proc. */
export async function startWorker(
  env: NodeJS.ProcessEnv,
): Promise<{ pid: number; stop(): Promise<unknown> }> {
  // BENCH_WORKER_PROFILE=<dir>: each worker writes a V8 CPU profile there when it stops.
  const profile = process.env.BENCH_WORKER_PROFILE;
  const flags = profile ? ['--cpu-prof', `--cpu-prof-dir=${profile}`] : [];
  const child: ChildProcess = spawn(process.execPath, [...flags, join(root, 'workers/worker.ts')], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (c: Buffer) => {
    out = (out + c.toString()).slice(-20_000);
  });
  child.stderr!.on('data', (c: Buffer) => {
    out = (out + c.toString()).slice(-20_000);
  });
  const deadline = Date.now() + 30_000;
  while (!out.includes('keyward worker ready')) {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`worker did not start:\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    pid: child.pid!,
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve(child.exitCode);
        child.once('exit', resolve);
        child.kill('SIGTERM');
      }),
  };
}

/** Runs `fn` over items, `n` at a time. */
export async function pool<T>(
  items: T[],
  n: number,
  fn: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (next < items.length) await fn(items[next++]);
    }),
  );
}
