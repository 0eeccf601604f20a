/**
 * The process's one Redis subscriber: every cross-instance message (the
 * change feed's changes, the jobs' cancel requests) arrives on a named channel of this bus, so a
 * process holds one subscriber connection whatever listens. A subscribed Redis connection can do
 * nothing else, which is why it is a duplicate of the process's client, and why there is only one.
 *
 * Redis pub/sub is at-most-once: a message sent while the subscriber is away is lost. Listeners
 * that must not miss anything (the change feed) pair the bus with a durable log and re-read it on
 * `onReady`, which fires on the first connection and on every reconnect.
 */
import type { Redis } from 'ioredis';
import type { Logger } from '../logger.ts';

/** The named channels of the bus; a name with a prefix belongs to a deployment's queue prefix. */
export const CHANNELS = {
  /** Committed changes of the change feed (shared/fanout/change-feed.ts). */
  changes: 'keyward:changes',
  /** Cancel requests for running jobs: the API publishes a job id, the worker running it aborts it. */
  jobCancel: (prefix: string) => `${prefix}:jobs:cancel`,
} as const;

/** A listener of one channel; it gets the message as published. */
export type ChannelListener = (message: string) => void;

/** The bus of one process. */
/**
 * The bus over the process's Redis client; without Redis it is a bus that never delivers, and
 * every listener relies on its fallback (the change log poll, the cancel tombstone).
 */
export class FanoutBus {
  readonly #redis: Redis | undefined;
  readonly #logger: Logger;
  readonly #listeners = new Map<string, ChannelListener[]>();
  readonly #readyListeners: Array<() => void> = [];
  #subscriber: Redis | null = null;
  #closed = false;

  constructor(redis: Redis | undefined, logger: Logger) {
    this.#redis = redis;
    this.#logger = logger;
  }

  /**
   * Calls `listener` for every message on `channel`, from any instance; subscribes on first use.
   * Resolves once Redis confirmed the subscription (at once without Redis); never rejects.
   */
  async on(channel: string, listener: ChannelListener): Promise<void> {
    const list = this.#listeners.get(channel);
    if (list) {
      list.push(listener);
      return;
    }
    this.#listeners.set(channel, [listener]);
    await this.#connection()
      ?.subscribe(channel)
      .catch((err: Error) =>
        this.#logger.warn(
          { err: err.message, channel },
          "fanout: subscribe failed; the channel's fallback carries its messages",
        ),
      );
  }

  /** Called on every (re)connection of the subscriber: messages sent meanwhile are gone, re-read what matters. */
  onReady(listener: () => void): void {
    this.#readyListeners.push(listener);
  }

  /** Publishes a message; false when Redis is not ready or refused it (the caller's fallback carries it). */
  async publish(channel: string, message: string): Promise<boolean> {
    const redis = this.#redis;
    if (!redis || redis.status !== 'ready') return false;
    try {
      await redis.publish(channel, message);
      return true;
    } catch (err) {
      this.#logger.warn({ err: (err as Error).message, channel }, 'fanout: publish failed');
      return false;
    }
  }

  /** Closes the subscriber connection (never the client it duplicated); safe to call twice. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const sub = this.#subscriber;
    this.#subscriber = null;
    if (sub) await sub.quit().catch(() => sub.disconnect());
  }

  #connection(): Redis | null {
    if (!this.#redis || this.#closed) return null;
    if (this.#subscriber) return this.#subscriber;
    const logger = this.#logger;
    const listeners = this.#listeners;
    // The offline queue holds the SUBSCRIBE commands until the connection is up; ioredis
    // subscribes again to every channel after a reconnect (autoResubscribe).
    const sub = this.#redis.duplicate({ enableOfflineQueue: true });
    this.#subscriber = sub;
    // Without an error listener an 'error' event would crash the process.
    sub.on('error', (err: Error) =>
      logger.warn({ err: err.message }, 'fanout: redis subscriber error'),
    );
    sub.on('ready', () => {
      // ioredis re-subscribes after a reconnect only the channels whose SUBSCRIBE succeeded; a
      // channel whose first SUBSCRIBE failed (Redis down at start) would stay deaf for the life of
      // the process. Subscribing every known channel on each ready is idempotent and closes that.
      const channels = [...listeners.keys()];
      if (channels.length > 0) {
        sub
          .subscribe(...channels)
          .catch((err: Error) =>
            logger.warn(
              { err: err.message, channels },
              'fanout: re-subscribe failed; retried on the next ready',
            ),
          );
      }
      for (const l of this.#readyListeners) {
        try {
          l();
        } catch (err) {
          logger.error({ err: (err as Error).message }, 'fanout: ready listener failed');
        }
      }
    });
    sub.on('message', (channel: string, message: string) => {
      for (const l of listeners.get(channel) ?? []) {
        try {
          l(message);
        } catch (err) {
          logger.error({ err: (err as Error).message, channel }, 'fanout: channel listener failed');
        }
      }
    });
    return sub;
  }
}
