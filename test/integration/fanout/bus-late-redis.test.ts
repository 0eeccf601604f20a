/**
 * Review R1: the worker's cancel channel when Redis is not reachable at start. Before the
 * restructuring the worker awaited `subscriber.subscribe(cancelChannel)` and failed to start
 * when it rejected; the bus swallows the rejection ("never rejects") and never subscribes the
 * channel again, so a worker started during a Redis blip runs for its whole life without
 * hearing any cancel of a running job. Needs Redis at 127.0.0.1:6379 (TEST_REDIS_URL).
 */
import { Writable } from 'node:stream';
import { Redis } from 'ioredis';
import { createLogger } from '../../../shared/logger.ts';
import { CHANNELS, FanoutBus } from '../../../shared/fanout/bus.ts';
import { startTcpProxy, type TcpProxy } from '../../support/tcp-proxy.ts';
import { TEST_REDIS_URL } from '../../../support/database.ts';
import { sleep } from '../../support/time.ts';

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

describe('review R1: a cancel channel subscribed while Redis is away', () => {
  let proxy: TcpProxy;
  let redis: Redis;
  let publisher: Redis;
  beforeAll(async () => {
    const target = new URL(TEST_REDIS_URL);
    proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 6379) });
    publisher = new Redis(TEST_REDIS_URL);
  });
  afterAll(async () => {
    redis?.disconnect();
    publisher.disconnect();
    await proxy.close();
  });

  it('when Redis comes back after the worker subscribed, then a cancel published afterwards reaches the listener', async () => {
    proxy.refuse();
    // The worker's own client (workers/start.ts): maxRetriesPerRequest 2, with an error listener.
    redis = new Redis({
      host: '127.0.0.1',
      port: proxy.port,
      maxRetriesPerRequest: 2,
      retryStrategy: () => 50,
    });
    redis.on('error', () => undefined);
    const bus = new FanoutBus(redis, logger);
    const channel = CHANNELS.jobCancel(`review-r1-${process.pid}`);
    const got: string[] = [];
    await bus.on(channel, (m) => got.push(m)); // resolves: the failure is only logged
    proxy.accept();
    const deadline = Date.now() + 5_000;
    while (Date.now() < deadline && (await publisher.publish(channel, 'job-1')) === 0)
      await sleep(100);
    await sleep(200);
    await bus.close();
    expect(got).toContain('job-1');
  }, 15_000);
});
