/**
 * The bus of cross-instance messages (shared/fanout/bus.ts): one subscriber connection per
 * process whatever listens (the worker had one for the change feed and another for job
 * cancels), named channels, listeners that fail alone, and no Redis meaning no delivery rather
 * than a failure. Needs Redis at 127.0.0.1:6379 (TEST_REDIS_URL).
 */
import { Writable } from 'node:stream';
import { jest } from '@jest/globals';
import type { Redis } from 'ioredis';
import { createLogger } from '../../../shared/logger.ts';
import { connectRedis } from '../../../shared/redis.ts';
import { CHANNELS, FanoutBus } from '../../../shared/fanout/bus.ts';
import { TEST_REDIS_URL } from '../../../support/database.ts';
import { expectEventually } from '../../support/time.ts';

const lines: string[] = [];
const logger = createLogger(
  'warn',
  new Writable({
    write(c, _e, cb) {
      lines.push(String(c));
      cb();
    },
  }),
);
const prefix = `fanout-test-${process.pid}-${Date.now()}`;

/** Waits (bounded) for `check` to hold: the machine is shared, so no fixed sleeps. */
const until = (check: () => boolean) => expectEventually(() => expect(check()).toBe(true));

describe('one subscriber per process for every cross-instance channel', () => {
  let redis: Redis;
  let publisher: Redis;
  const buses: FanoutBus[] = [];
  beforeAll(async () => {
    redis = await connectRedis(TEST_REDIS_URL, logger);
    publisher = await connectRedis(TEST_REDIS_URL, logger);
  });
  afterAll(async () => {
    for (const b of buses) await b.close();
    redis.disconnect();
    publisher.disconnect();
  });

  it("when the change feed and the job cancel channel both listen, then the process opens one subscriber connection and each listener gets its own channel's messages", async () => {
    const duplicate = jest.spyOn(redis, 'duplicate');
    const bus = new FanoutBus(redis, logger);
    buses.push(bus);
    const changes: string[] = [];
    const cancels: string[] = [];
    const changesChannel = `${prefix}:changes`;
    await bus.on(changesChannel, (m) => changes.push(m));
    await bus.on(CHANNELS.jobCancel(prefix), (m) => cancels.push(m));
    await bus.on(CHANNELS.jobCancel(prefix), (m) => cancels.push(`again:${m}`));
    expect(duplicate).toHaveBeenCalledTimes(1);
    duplicate.mockRestore();
    expect(await publisher.publish(changesChannel, 'c-1')).toBe(1);
    expect(await publisher.publish(CHANNELS.jobCancel(prefix), 'job-1')).toBe(1);
    await until(() => changes.length === 1 && cancels.length === 2);
    expect(changes).toEqual(['c-1']);
    expect(cancels).toEqual(['job-1', 'again:job-1']);
  });

  it('when one listener throws, then the others of the channel still get the message and the failure is logged', async () => {
    const bus = new FanoutBus(redis, logger);
    buses.push(bus);
    const got: string[] = [];
    const channel = `${prefix}:throwing`;
    await bus.on(channel, () => {
      throw new Error('listener bug');
    });
    await bus.on(channel, (m) => got.push(m));
    expect(await bus.publish(channel, 'm-1')).toBe(true);
    await until(() => got.length === 1);
    expect(lines.join('')).toContain('listener bug');
  });

  it('when the subscriber connects, then the ready listeners run (the change feed re-reads its log there)', async () => {
    const bus = new FanoutBus(redis, logger);
    buses.push(bus);
    let ready = 0;
    bus.onReady(() => {
      ready += 1;
    });
    await bus.on(`${prefix}:ready`, () => undefined);
    await until(() => ready === 1);
  });

  it('when closed twice, then the second close does nothing and the subscriber is gone', async () => {
    const bus = new FanoutBus(redis, logger);
    const channel = `${prefix}:closing`;
    await bus.on(channel, () => undefined);
    expect(await publisher.publish(channel, 'x')).toBe(1);
    await bus.close();
    await bus.close();
    expect(await publisher.publish(channel, 'x')).toBe(0);
  });

  it('when there is no Redis, then listening resolves, publishing answers false and nothing is delivered (the fallbacks carry the messages)', async () => {
    const bus = new FanoutBus(undefined, logger);
    const got: string[] = [];
    await bus.on(`${prefix}:none`, (m) => got.push(m));
    expect(await bus.publish(`${prefix}:none`, 'lost')).toBe(false);
    await bus.close();
    expect(got).toEqual([]);
  });
});
