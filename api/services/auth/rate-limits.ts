/**
 * Rate limits per client and per endpoint, shared through Redis when REDIS_URL is set
 * and in memory otherwise. Failed authentications have their own, much tighter budget, and the
 * password lockout keeps its counts here too, per (account, client address).
 */
import { createHash } from 'node:crypto';
import {
  RateLimiterMemory,
  RateLimiterRedis,
  RateLimiterRes,
  type RateLimiterAbstract,
} from 'rate-limiter-flexible';
import type { Redis } from 'ioredis';
import type { Config } from '../../../shared/config/index.ts';
import { OAuthError } from '../../../shared/errors/index.ts';

/** Longest password lockout: someone without the password may delay a login, never deny it for longer. */
export const MAX_LOCKOUT_SECONDS = 15 * 60;
/** Reset mails one account can be sent per hour, whoever asks: forgot-password must not become a mail flood. */
export const RESET_MAILS_PER_HOUR = 3;
/** Forgot-password requests one client address may make per minute. */
export const FORGOT_PER_ADDRESS_PER_MINUTE = 20;

export interface RateLimits {
  /** Successful-path budget of the token endpoints; throws RateLimited when spent. */
  token: RateLimiterAbstract;
  /** Failed authentications per client (or user) per minute. */
  failures: RateLimiterAbstract;
  /** Bearer API requests per client per endpoint. */
  api: RateLimiterAbstract;
  /** Wrong passwords per (account, address) within MAX_LOCKOUT_SECONDS; blocked while locked. */
  lockout: RateLimiterAbstract;
  /** Lockouts per (account, address) in the last day: the exponent of the backoff. */
  lockouts: RateLimiterAbstract;
  /** Reset mails per account per hour. */
  resetMails: RateLimiterAbstract;
  /** Forgot-password requests per client address per minute. */
  forgot: RateLimiterAbstract;
  /**
   * The (access key, address) pairs this instance saw spend their failure budget, until when
   * (ms): their AWS KMS requests answer 429 without being verified, and without asking the
   * limiter, so a correctly signed request never waits on a round trip for the budget. At most
   * MAX_SPENT_PAIRS, the oldest dropped first.
   */
  spentPairs: Map<string, number>;
}

/** Spent pairs remembered at most (RateLimits.spentPairs). */
export const MAX_SPENT_PAIRS = 10_000;

/** Builds the limiters on Redis or in memory. */
export function createRateLimits(config: Config, redis?: Redis): RateLimits {
  const make = (keyPrefix: string, points: number, duration = 60) =>
    redis
      ? new RateLimiterRedis({
          storeClient: redis,
          keyPrefix: `keyward:rl:${keyPrefix}`,
          points,
          duration,
          insuranceLimiter: new RateLimiterMemory({ keyPrefix, points, duration }),
        })
      : new RateLimiterMemory({ keyPrefix, points, duration });
  return {
    token: make('token', config.rateLimitTokenPerMinute),
    failures: make('fail', config.rateLimitFailuresPerMinute),
    api: make('api', config.rateLimitApiPerMinute),
    lockout: make('lock', config.lockoutThreshold, MAX_LOCKOUT_SECONDS),
    lockouts: make('locks', 1_000_000, 86_400),
    resetMails: make('mail', RESET_MAILS_PER_HOUR, 3_600),
    forgot: make('forgot', FORGOT_PER_ADDRESS_PER_MINUTE),
    spentPairs: new Map(),
  };
}

/**
 * The key of one identity's budget. The parts are canonical identities (a lower-case client id,
 * tenant and user name, a refresh-token family, a token subject, an address); they are hashed so
 * a key never keeps client-supplied bytes: a 16 KiB client_id costs the same 40 bytes as any other.
 */
export function rateKey(
  kind: 'client' | 'user' | 'refresh' | 'subject' | 'address' | 'reset' | 'forgot',
  ...parts: string[]
): string {
  return `${kind}:${createHash('sha256').update(parts.join('\u0000')).digest('base64url').slice(0, 32)}`;
}

/** Seconds until a spent budget refills, for Retry-After (at least 1). */
export function retryAfterSeconds(res: unknown): number {
  return res instanceof RateLimiterRes ? Math.max(1, Math.ceil(res.msBeforeNext / 1000)) : 1;
}

/** True when a limiter rejection (not an infrastructure error). */
export function isRateLimited(err: unknown): err is RateLimiterRes {
  return err instanceof RateLimiterRes;
}

/**
 * Runs one authentication attempt behind the budgets of `key`: 429 too_many_requests once the
 * failure budget or the request budget is spent; a failure (`failed`, by default an
 * invalid_grant or invalid_client answer) spends a point of the failure budget.
 */
export async function withAuthBudget<T>(
  limits: RateLimits,
  key: string,
  attempt: () => Promise<T>,
  failed: (err: unknown) => boolean = isCredentialFailure,
): Promise<T> {
  const spent = await limits.failures.get(key);
  if (spent && spent.consumedPoints >= limits.failures.points) {
    throw new OAuthError('too_many_requests', 'too many failed attempts; retry later', 429, {
      'Retry-After': String(retryAfterSeconds(spent)),
    });
  }
  try {
    await limits.token.consume(key);
  } catch (err) {
    if (isRateLimited(err))
      throw new OAuthError('too_many_requests', 'rate limit reached; retry later', 429, {
        'Retry-After': String(retryAfterSeconds(err)),
      });
    throw err;
  }
  try {
    return await attempt();
  } catch (err) {
    if (failed(err)) await limits.failures.consume(key).catch(() => undefined);
    throw err;
  }
}

/** Wrong credentials (RFC 6749 5.2 invalid_grant, invalid_client), not malformed requests. */
export const isCredentialFailure = (err: unknown) =>
  err instanceof OAuthError && (err.error === 'invalid_grant' || err.error === 'invalid_client');

/** True while the (account, address) pair is locked out. */
export async function isLockedOut(limits: RateLimits, key: string): Promise<boolean> {
  const state = await limits.lockout.get(key);
  return state !== null && state.consumedPoints >= limits.lockout.points;
}

/**
 * Counts a wrong password of an (account, address) pair; the failure that reaches the threshold
 * locks the pair for base * 2^(earlier lockouts that day), never longer than MAX_LOCKOUT_SECONDS.
 */
export async function recordWrongPassword(
  limits: RateLimits,
  key: string,
  baseSeconds: number,
): Promise<void> {
  let state: RateLimiterRes;
  try {
    state = await limits.lockout.consume(key);
  } catch (err) {
    if (isRateLimited(err)) return; // already past the threshold: the lock is set (or being set)
    throw err;
  }
  if (state.consumedPoints < limits.lockout.points) return;
  const earlier = await limits.lockouts.consume(key).then(
    (r) => r.consumedPoints - 1,
    () => 20,
  );
  const seconds = Math.min(baseSeconds * 2 ** Math.min(earlier, 20), MAX_LOCKOUT_SECONDS);
  await limits.lockout.block(key, seconds);
}

/** Forgets the failures and lockouts of a pair after the right password. */
export async function clearLockout(limits: RateLimits, key: string): Promise<void> {
  await Promise.all([limits.lockout.delete(key), limits.lockouts.delete(key)]);
}
