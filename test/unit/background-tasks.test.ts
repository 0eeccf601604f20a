/** Background tasks: after the current turn, failures logged, shutdown waits for them. */
import { Writable } from 'node:stream';
import { createBackgroundTasks } from '../../api/background.ts';
import { createLogger } from '../../shared/logger.ts';

/** A logger whose lines are kept, to read what the tasks told the operator. */
function keptLogger() {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      lines.push(String(chunk));
      cb();
    },
  });
  return { logger: createLogger('info', sink), lines };
}

describe('background tasks', () => {
  it('when a task is started, then it runs only after the code that started it has finished its turn', async () => {
    const { logger } = keptLogger();
    const tasks = createBackgroundTasks(logger);
    const order: string[] = [];
    tasks.run('t', async () => void order.push('task'));
    await Promise.resolve();
    order.push('answer written');
    await tasks.idle();
    expect(order).toEqual(['answer written', 'task']);
  });

  it('when a task fails, then the failure is logged with its name and nothing is rejected', async () => {
    const { logger, lines } = keptLogger();
    const tasks = createBackgroundTasks(logger);
    tasks.run('reset mail', async () => {
      throw new Error('relay down');
    });
    await expect(tasks.idle()).resolves.toBeUndefined();
    const line = JSON.parse(lines.find((l) => l.includes('relay down'))!);
    expect(line).toMatchObject({ task: 'reset mail', err: 'relay down' });
  });

  it('when closed while a task is under way, then close waits for it, and later tasks are refused with a warning', async () => {
    const { logger, lines } = keptLogger();
    const tasks = createBackgroundTasks(logger);
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let finished = false;
    tasks.run('slow', async () => {
      await gate;
      finished = true;
    });
    let closed = false;
    const closing = tasks.close().then(() => (closed = true));
    await new Promise((resolve) => setImmediate(resolve));
    expect(closed).toBe(false);
    release();
    await closing;
    expect(finished).toBe(true);
    let ran = false;
    tasks.run('late', async () => void (ran = true));
    await tasks.idle();
    await new Promise((resolve) => setImmediate(resolve));
    expect(ran).toBe(false);
    expect(lines.join('')).toContain('not run');
  });
});
