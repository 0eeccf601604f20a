/**
 * Rate limits per client and per endpoint (spec 8), shared through Redis when REDIS_URL is set
 * and in memory otherwise. Failed authentications have their own, much tighter budget.
 */
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Redis } from 'ioredis';
import type { Config } from '../../../shared/config/index.ts';

export interface RateLimits {
  /** Successful-path budget of the token endpoints; throws RateLimited when spent. */
  token: RateLimiterAbstract;
  /** Failed authentications per client (or user) per minute. */
  failures: RateLimiterAbstract;
  /** Bearer API requests per client per endpoint. */
  api: RateLimiterAbstract;
}

/** The effective thresholds, also reported by the effective policy. */
export function rateLimitPolicy(config: Config) {
  return {
    tokenRequestsPerMinute: config.rateLimitTokenPerMinute,
    failedAuthenticationsPerMinute: config.rateLimitFailuresPerMinute,
    apiRequestsPerMinutePerEndpoint: config.rateLimitApiPerMinute,
  };
}

/** Builds the three limiters on Redis or in memory. */
export function createRateLimits(config: Config, redis?: Redis): RateLimits {
  const make = (keyPrefix: string, points: number) =>
    redis
      ? new RateLimiterRedis({ storeClient: redis, keyPrefix: `keyward:rl:${keyPrefix}`, points, duration: 60, insuranceLimiter: new RateLimiterMemory({ keyPrefix, points, duration: 60 }) })
      : new RateLimiterMemory({ keyPrefix, points, duration: 60 });
  return {
    token: make('token', config.rateLimitTokenPerMinute),
    failures: make('fail', config.rateLimitFailuresPerMinute),
    api: make('api', config.rateLimitApiPerMinute),
  };
}

/** Seconds until a spent budget refills, for Retry-After (at least 1). */
export function retryAfterSeconds(res: unknown): number {
  return res instanceof RateLimiterRes ? Math.max(1, Math.ceil(res.msBeforeNext / 1000)) : 1;
}

/** True when a limiter rejection (not an infrastructure error). */
export function isRateLimited(err: unknown): err is RateLimiterRes {
  return err instanceof RateLimiterRes;
}
