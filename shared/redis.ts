/**
 * The Redis connection of a process (rate limits, change feed, job queue reads). Requests must
 * not wait for Redis: with the offline queue off and short timeouts, a command while Redis is
 * away fails at once and its caller falls back (rate limits to memory, changes to the log poll,
 * jobs to 503 queue-unavailable), while the client reconnects in the background.
 */
import type { Redis } from 'ioredis';
import type { Logger } from './logger.ts';

/** How long start-up waits for a first connection before going on without Redis. */
const READY_WAIT_MS = 2_000;

/** Connects (waiting briefly for the first connection) and logs every connection error. */
export async function connectRedis(url: string, logger: Logger): Promise<Redis> {
  const { Redis } = await import('ioredis'); // ~2.4 MB of heap, only for deployments that use Redis
  const client = new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 2_000,
    commandTimeout: 2_000,
    enableAutoPipelining: true,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2_000),
  });
  let down = false;
  client.on('error', (err) => {
    if (!down)
      logger.warn(
        { err: err.message },
        'redis connection error; serving from in-memory fallbacks until it is back',
      );
    down = true;
  });
  client.on('ready', () => {
    if (down) logger.info('redis connection back');
    down = false;
  });
  await new Promise<void>((resolve) => {
    const timer = setTimeout(() => {
      logger.warn(
        { url: url.replace(/\/\/[^@]*@/, '//***@') },
        'redis is not reachable at start; going on with in-memory fallbacks',
      );
      resolve();
    }, READY_WAIT_MS);
    timer.unref();
    client.once('ready', () => {
      clearTimeout(timer);
      resolve();
    });
  });
  return client;
}
