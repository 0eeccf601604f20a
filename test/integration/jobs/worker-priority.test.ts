/**
 * A worker lowers its scheduling priority to WORKER_NICE (10 by default) before it takes
 * conversions, so that beside the API on one machine a runtime request takes a core before a
 * conversion does: every thread, those started before (the garbage collector's, libuv's) and
 * those after (the pools). Read from /proc, as the scheduler sees it.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { spawnWorker, startJobsEnv, type JobsEnv, type WorkerChild } from './harness.ts';

let env: JobsEnv;
const workers: WorkerChild[] = [];

/** The nice value of each thread of a process (field 19 of /proc/<pid>/task/<tid>/stat). */
function threadNiceness(pid: number): number[] {
  return readdirSync(`/proc/${pid}/task`).map((tid) => {
    const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    // The command name in parentheses may hold spaces: count fields after its closing one.
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
  });
}

beforeAll(async () => {
  env = await startJobsEnv();
}, 120_000);

afterAll(async () => {
  await Promise.all(workers.map((w) => w.stop()));
  await env?.close();
});

describe('the worker process priority', () => {
  it('when WORKER_NICE is not set, then the worker runs at niceness 10 and so does every thread of it', async () => {
    const { WORKER_NICE: _usual, ...defaults } = env.workerEnv();
    const w = await spawnWorker(defaults);
    workers.push(w);
    expect(w.output()).toContain('"nice":10');
    const nice = threadNiceness(w.process.pid!);
    // Every thread: the main one, the garbage collector's and libuv's started before, and the
    // pools started after it.
    expect(nice.length).toBeGreaterThan(1);
    expect(nice.every((n) => n === 10)).toBe(true);
  }, 60_000);

  it('when WORKER_NICE is 0, then the worker keeps the priority it was started with', async () => {
    const w = await spawnWorker(env.workerEnv({ WORKER_NICE: '0' }));
    workers.push(w);
    expect(threadNiceness(w.process.pid!)[0]).toBe(0);
  }, 60_000);

  it('when WORKER_NICE is outside 0 to 19, then the worker refuses to start and says why', async () => {
    const refused = await spawnWorker(env.workerEnv({ WORKER_NICE: '20' }), 20_000).then(
      () => null,
      (err: Error) => err.message,
    );
    expect(refused).toMatch(/WORKER_NICE must be 0 to 19/);
  }, 60_000);
});
