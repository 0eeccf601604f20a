/**
 * The guarantee that a test file leaves no process running (support/processes.ts,
 * environment.ts, file-teardown.ts), in seconds: stubborn children and their grandchildren are
 * killed, and a file whose set-up failed or timed out is torn down before the next file starts.
 */
import { spawnSync, type spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { scaled } from '../../../support/deadline.ts';
import { FileTeardown } from '../../../support/file-teardown.ts';
import {
  alive,
  killRecordedGroups,
  processInfo,
  RECORD_DIR,
  spawnTracked,
  stopProcesses,
} from '../../../support/processes.ts';
import { sleep } from '../../support/time.ts';

const root = new URL('../../../', import.meta.url).pathname;

/** Ignores SIGTERM, starts a grandchild (`sleep`), prints both pids, waits; exits at once with EXIT. */
const STUBBORN = `process.on('SIGTERM', () => {});
const g = require('node:child_process').spawn('sleep', ['300'], { stdio: 'ignore' });
console.log(process.pid + ' ' + g.pid);
if (process.env.EXIT) process.exit(0);
setInterval(() => {}, 1000);`;

/** Starts STUBBORN through `start` and answers [child, grandchild]. */
async function stubborn(
  start: typeof spawn | typeof spawnTracked,
  env: NodeJS.ProcessEnv = process.env,
): Promise<[number, number]> {
  const child = start(process.execPath, ['-e', STUBBORN], {
    stdio: ['ignore', 'pipe', 'ignore'],
    env,
  });
  const line = await new Promise<string>((resolve) =>
    child.stdout!.once('data', (d: Buffer) => resolve(d.toString())),
  );
  const [a, b] = line.trim().split(' ').map(Number);
  return [a, b];
}

const leftovers: number[] = [];
afterAll(() => {
  for (const pid of leftovers) if (alive(pid)) process.kill(pid, 'SIGKILL');
});

describe('stopping processes', () => {
  test('when a child ignores SIGTERM, then it and its grandchild are gone after the grace, by SIGKILL', async () => {
    const [child, grandchild] = await stubborn(spawnTracked);
    leftovers.push(child, grandchild);
    expect(processInfo(child)!.pgid).toBe(child);
    expect(processInfo(grandchild)!.pgid).toBe(child);
    const started = Date.now();
    const killed = await stopProcesses({ groups: [child] }, { graceMs: 300 });
    expect(Date.now() - started).toBeLessThan(scaled(5_000));
    expect(killed.map((r) => r.pid)).toContain(child);
    expect(alive(child)).toBe(false);
    expect(alive(grandchild)).toBe(false);
  });

  test('when a tracked child exits and leaves a grandchild, then its recorded group is still killed', async () => {
    const [child, grandchild] = await stubborn(spawnTracked, { ...process.env, EXIT: '1' });
    leftovers.push(grandchild);
    const deadline = Date.now() + 5_000;
    while (alive(child) && Date.now() < deadline) await sleep(20);
    expect(alive(child)).toBe(false);
    expect(alive(grandchild)).toBe(true);
    expect(readdirSync(RECORD_DIR).some((f) => f.startsWith(`${child}-`))).toBe(true);
    expect(await killRecordedGroups((r) => r.owner === process.pid, { graceMs: 300 })).toBe(1);
    expect(alive(grandchild)).toBe(false);
    expect(readdirSync(RECORD_DIR).some((f) => f.startsWith(`${child}-`))).toBe(false);
  });

  test('when asked to stop its own group, then the caller is left alone', async () => {
    const own = processInfo(process.pid)!.pgid;
    expect(await stopProcesses({ groups: [own], pids: [process.pid] })).toEqual([]);
  });
});

describe('closing what a file started in-process', () => {
  test('when the file ends, then closers run last registered first, each once', async () => {
    const list = new FileTeardown();
    const order: string[] = [];
    list.add('first', Promise.resolve('a'), (v) => order.push(v));
    list.add('second', Promise.resolve('b'), (v) => order.push(v));
    list.add('failed start', Promise.reject(new Error('no')), () => order.push('never'));
    expect(await list.closeAll(1_000)).toEqual([]);
    expect(order).toEqual(['b', 'a']);
  });

  test('when a start outlives the file, then it is closed as soon as it finishes', async () => {
    const list = new FileTeardown();
    let finish!: (v: string) => void;
    const closed: string[] = [];
    list.add('slow start', new Promise<string>((r) => (finish = r)), (v) => closed.push(v));
    expect(await list.closeAll(50)).toEqual(['slow start: not closed within 50 ms']);
    list.add('start after the end', Promise.resolve('late'), (v) => closed.push(v));
    finish('slow');
    await sleep(10);
    expect(closed.sort()).toEqual(['late', 'slow']);
  });

  test('when a closer throws, then the others still run and the problem is answered', async () => {
    const list = new FileTeardown();
    const closed: string[] = [];
    list.add('good', Promise.resolve('good'), (v) => closed.push(v));
    list.add('bad', Promise.resolve('bad'), () => {
      throw new Error('boom');
    });
    expect(await list.closeAll(1_000)).toEqual(['bad: boom']);
    expect(closed).toEqual(['good']);
  });
});

describe('a jest run whose set-up fails', () => {
  test('when a beforeAll throws or times out after starting stubborn processes, then they are gone before the next file starts', () => {
    const probe = mkdtempSync(join(tmpdir(), 'keyward-teardown-probe-'));
    try {
      const run = spawnSync(
        process.execPath,
        [
          '--experimental-vm-modules',
          '--no-warnings=ExperimentalWarning',
          join(root, 'node_modules/jest/bin/jest.js'),
          '--runInBand',
          '--ci',
          '--json',
          '--roots',
          '<rootDir>/test/fixtures/teardown',
          '--testMatch',
          '**/*.fixture.ts',
          '--testSequencer',
          '<rootDir>/test/fixtures/teardown/sequencer.ts',
          '--cacheDirectory',
          join(probe, 'cache'),
        ],
        {
          cwd: root,
          encoding: 'utf8',
          timeout: scaled(60_000),
          env: {
            ...process.env,
            KEYWARD_TEARDOWN_PROBE_DIR: probe,
            KEYWARD_TEST_PROCESS_DIR: join(probe, 'records'),
            // Hooks time out after 6 s (a hook's least limit, 120 s, times this): time enough to
            // start the children on a loaded machine, and the hanging hook is not waited for long.
            KEYWARD_TEST_TIME_SCALE: '0.05',
          },
        },
      );
      const pids = existsSync(join(probe, 'pids'))
        ? readFileSync(join(probe, 'pids'), 'utf8').trim().split(/\s+/).map(Number)
        : [];
      leftovers.push(...pids);
      const report = JSON.parse(run.stdout) as {
        testResults: Array<{ name: string; status: string; message: string }>;
      };
      const byFile = Object.fromEntries(
        report.testResults.map((r) => [r.name.slice(r.name.lastIndexOf('/') + 1), r]),
      );
      expect(pids).toHaveLength(4);
      expect(byFile['1-failing-setup.fixture.ts'].message).toContain('set-up failed on purpose');
      expect(byFile['1-failing-setup.fixture.ts'].message).toContain('Exceeded timeout');
      expect(byFile['2-next-file.fixture.ts']).toMatchObject({ status: 'passed' });
      expect(run.stderr).toMatch(
        /1-failing-setup\.fixture\.ts: still running when the file ended: stopped 4 process\(es\) \(2 needed SIGKILL\)/,
      );
      expect(pids.filter((pid) => alive(pid))).toEqual([]);
    } finally {
      rmSync(probe, { recursive: true, force: true });
    }
  });
});
