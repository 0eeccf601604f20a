/**
 * The buffered destination of the log. Lines wait in memory until a batch is full or
 * the flush interval passes, a flush writes out everything pending, and a reader that falls
 * behind makes lines drop (counted) rather than memory grow.
 */
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bufferedDestination } from '../../../shared/log-destination.ts';
import { sleep } from '../../support/time.ts';

describe('the buffered log destination', () => {
  const dir = mkdtempSync(join(tmpdir(), 'keyward-logdest-'));
  const fds: number[] = [];
  const file = (name: string) => {
    const fd = openSync(join(dir, name), 'w');
    fds.push(fd);
    return { fd, text: () => readFileSync(join(dir, name), 'utf8') };
  };
  afterAll(() => {
    for (const fd of fds) closeSync(fd);
    rmSync(dir, { recursive: true, force: true });
  });

  it('when fewer bytes than a batch are written, then nothing goes out until the flush interval, then all of it in order', async () => {
    const f = file('interval.log');
    const dest = bufferedDestination({
      fd: f.fd,
      batchBytes: 1 << 20,
      flushMs: 50,
      maxBytes: 1 << 24,
    });
    for (let i = 0; i < 100; i += 1) dest.write(`line ${i}\n`);
    expect(f.text()).toBe('');
    await sleep(300);
    expect(f.text()).toBe(Array.from({ length: 100 }, (_, i) => `line ${i}\n`).join(''));
  });

  it('when a line is written while a full batch is in flight and no line follows, then it still goes out', async () => {
    // The queue worker's start (test/integration/jobs/resilience.test.ts): a batch went out with
    // no flush timer armed, "keyward worker ready" came while that write was in flight, and
    // nothing was logged after it, so the line stayed in memory and the worker looked stuck.
    const f = file('in-flight.log');
    const dest = bufferedDestination({ fd: f.fd, batchBytes: 64, flushMs: 20, maxBytes: 1 << 24 });
    const full = `${'x'.repeat(100)}\n`;
    dest.write(full); // a full batch: written at once, no timer armed
    dest.write('keyward worker ready\n'); // the write above has not called back yet
    // No deadline of ours: with the line left behind, this waits until the test's own timeout.
    while (!f.text().includes('ready')) await sleep(10);
    expect(f.text()).toBe(`${full}keyward worker ready\n`);
  });

  it('when a line is written while the batch the flush timer sent is in flight, then it still goes out', async () => {
    const f = file('timer-in-flight.log');
    const dest = bufferedDestination({
      fd: f.fd,
      batchBytes: 1 << 20,
      flushMs: 20,
      maxBytes: 1 << 24,
    });
    dest.write('start-up: migrations done\n'); // arms the flush timer
    // Same delay, armed in the same tick after the destination's: it runs in the same timers
    // phase right after the timer sent its batch, before that write's callback can run.
    setTimeout(() => dest.write('keyward worker ready\n'), 20);
    while (!f.text().includes('ready')) await sleep(10);
    expect(f.text()).toBe('start-up: migrations done\nkeyward worker ready\n');
  });

  it('when many batches are written and then flushed, then every line is out when the flush calls back', async () => {
    const f = file('flush.log');
    const dest = bufferedDestination({
      fd: f.fd,
      batchBytes: 256,
      flushMs: 60_000,
      maxBytes: 1 << 24,
    });
    const expected: string[] = [];
    for (let i = 0; i < 5000; i += 1) {
      const line = `{"n":${i},"pad":"${'x'.repeat(i % 50)}"}\n`;
      expected.push(line);
      dest.write(line);
      if (i % 97 === 0) await new Promise((r) => setImmediate(r));
    }
    await new Promise<void>((resolve) => dest.flush(() => resolve()));
    expect(f.text()).toBe(expected.join(''));
  });

  it('when more than maxBytes is pending, then further lines are dropped and counted, and memory stays bounded', async () => {
    const f = file('drop.log');
    let dropped = 0;
    const dest = bufferedDestination({
      fd: f.fd,
      batchBytes: 1 << 20,
      flushMs: 60_000,
      maxBytes: 1000,
      onDrop: () => (dropped += 1),
    });
    for (let i = 0; i < 200; i += 1) dest.write(`${String(i).padStart(9, '0')}\n`);
    expect(dropped).toBe(100);
    await new Promise<void>((resolve) => dest.flush(() => resolve()));
    expect(f.text().split('\n').filter(Boolean)).toHaveLength(100);
  });

  it('when the process exits with lines pending, then flushSync writes them', () => {
    const f = file('sync.log');
    const dest = bufferedDestination({
      fd: f.fd,
      batchBytes: 1 << 20,
      flushMs: 60_000,
      maxBytes: 1 << 24,
    });
    dest.write('last words\n');
    dest.flushSync();
    expect(f.text()).toBe('last words\n');
  });
});
