/** A process's closer list (shared/closers.ts): newest first, failures logged, closed once. */
import { Writable } from 'node:stream';
import { Closers } from '../../shared/closers.ts';
import { createLogger } from '../../shared/logger.ts';

/** A closer list whose log lines are kept, and the order its parts closed in. */
function keptClosers() {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      lines.push(String(chunk));
      cb();
    },
  });
  const closed: string[] = [];
  const closers = new Closers(createLogger('info', sink), async () => void closed.push('last'));
  const part = (name: string) => closers.add(name, async () => void closed.push(name));
  return { closers, part, closed, lines };
}

describe('the closer list of a process', () => {
  it('when it closes, then the parts close newest first and the last step runs after them', async () => {
    const { closers, part, closed } = keptClosers();
    part('database');
    part('change feed');
    part('audit log');
    await closers.close();
    expect(closed).toEqual(['audit log', 'change feed', 'database', 'last']);
  });

  it('when a part fails to close, then it is logged by name and the older parts still close', async () => {
    const { closers, part, closed, lines } = keptClosers();
    part('database');
    closers.add('redis', async () => {
      throw new Error('connection reset');
    });
    part('fanout');
    await expect(closers.close()).resolves.toBeUndefined();
    expect(closed).toEqual(['fanout', 'database', 'last']);
    const line = JSON.parse(lines.find((l) => l.includes('connection reset'))!);
    expect(line).toMatchObject({ part: 'redis', msg: 'error while closing' });
  });

  it('when it is closed twice, then the second call answers the first call promise and nothing closes twice (BullMQ Worker.close)', async () => {
    const { closers, part, closed } = keptClosers();
    part('database');
    const first = closers.close();
    const second = closers.close();
    expect(second).toBe(first);
    await first;
    expect(closers.close()).toBe(first);
    expect(closed).toEqual(['database', 'last']);
  });

  it('when a part is added while closing, then it closes in turn; added after, it closes at once', async () => {
    const { closers, part, closed } = keptClosers();
    part('database');
    closers.add('pool', async () => {
      part('job queue');
      closed.push('pool');
    });
    await closers.close();
    expect(closed).toEqual(['pool', 'job queue', 'database', 'last']);
    part('late queue');
    await new Promise((resolve) => setImmediate(resolve));
    expect(closed.at(-1)).toBe('late queue');
  });
});
