/**
 * The decryption-failure budget: failed decryptions per (tenant, principal, key) in a
 * window, shared by runtime decrypt and re-encrypt, conversion, stream re-encrypt and jobs, in
 * Redis when the process has it (every instance and worker sees the same count) and in memory on
 * the embedded default (one process). Once a pair's budget is spent, every decryption it asks for
 * with that key answers 429 for the rest of the window, whether it would have succeeded or not: an
 * oracle that survives a future change is then slow (a handful of guesses per window) and loud (a
 * log line, an audit event and a metric the shipped alert rules watch, once per window).
 */
import { createHash } from 'node:crypto';
import {
  RateLimiterMemory,
  RateLimiterRedis,
  RateLimiterRes,
  type RateLimiterAbstract,
} from 'rate-limiter-flexible';
import type { Redis } from 'ioredis';
import { problem } from '../errors/index.ts';
import type { Config } from '../config/index.ts';
import type { Logger } from '../logger.ts';
import type { DomainMetrics } from '../metrics/index.ts';
import type { AuditLog } from '../audit/log.ts';

/** Who decrypts: the tenant, the principal (an audit actor string) and whether its role may. */
export interface DecryptingCaller {
  tenantId: string;
  principal: string;
  /** The caller holds crypto.decrypt. */
  mayDecrypt: boolean;
}

/** Told once per window when a pair spends its budget. */
export type BudgetExhausted = (e: {
  tenantId: string;
  principal: string;
  kid: string;
  source: DecryptionSource;
  failures: number;
  windowSeconds: number;
}) => void;

/** What decrypted: the label of the metric and the audit details. */
export type DecryptionSource = 'runtime' | 'conversion' | 'stream' | 'job';

export interface DecryptionBudgetOptions {
  failures: number;
  windowSeconds: number;
  redis?: Redis;
  /** Counts each failure (a metric), with its source. */
  onFailure?: (source: DecryptionSource) => void;
  onExhausted?: BudgetExhausted;
}

/** The budget itself; one per process. */
export class DecryptionBudget {
  readonly #limiter: RateLimiterAbstract;
  readonly #opts: DecryptionBudgetOptions;
  /** Pairs reported spent, until their window ends: one report per window. */
  readonly #reported = new Map<string, number>();

  constructor(opts: DecryptionBudgetOptions) {
    this.#opts = opts;
    const keyPrefix = 'keyward:decrypt-failures';
    const settings = { keyPrefix, points: opts.failures, duration: opts.windowSeconds };
    this.#limiter = opts.redis
      ? new RateLimiterRedis({
          ...settings,
          storeClient: opts.redis,
          insuranceLimiter: new RateLimiterMemory(settings),
        })
      : new RateLimiterMemory(settings);
  }

  /** The key of a pair: hashed, so no caller-supplied bytes are kept. */
  #key(caller: DecryptingCaller, kid: string): string {
    return createHash('sha256')
      .update(`${caller.tenantId}\u0000${caller.principal}\u0000${kid}`)
      .digest('base64url')
      .slice(0, 32);
  }

  /**
   * Refuses a caller that may not decrypt (403, before any byte is decrypted) and, given a kid, a
   * pair whose budget is spent (429 with Retry-After). Check-then-count, for the runtime API,
   * whose AES-GCM and OAEP ciphertexts have no padding to probe: concurrent requests may each pass
   * the check before their failures are counted (reserve() closes that for the streaming paths).
   */
  async admit(caller: DecryptingCaller, kid?: string): Promise<void> {
    if (!caller.mayDecrypt) throw decryptionNotAllowed();
    if (kid === undefined) return;
    const state = await this.#limiter.get(this.#key(caller, kid));
    if (state && state.consumedPoints >= this.#opts.failures) throw spent(state);
  }

  /**
   * Reserves one failure of the pair before a streaming decryption (conversion, stream
   * re-encrypt, jobs): the point is spent now and given back by release() when the decryption
   * succeeds or the client leaves before its end, so N attempts in flight at once spend N points
   * and no burst of parallel guesses gets past the budget. 429 once nothing is left.
   */
  async reserve(caller: DecryptingCaller, kid: string): Promise<void> {
    if (!caller.mayDecrypt) throw decryptionNotAllowed();
    try {
      await this.#limiter.consume(this.#key(caller, kid));
    } catch (err) {
      if (err instanceof RateLimiterRes) throw spent(err);
      throw err;
    }
  }

  /** Gives back a reserved point: the decryption succeeded, or ended before it could tell. */
  async release(caller: DecryptingCaller, kid: string): Promise<void> {
    await this.#limiter.reward(this.#key(caller, kid), 1);
  }

  /**
   * A failed decryption of the pair: counted (unless `reserved`, whose point is already spent);
   * the failure that finds the budget spent is reported, once per window in this process.
   */
  async failed(
    caller: DecryptingCaller,
    kid: string,
    source: DecryptionSource,
    reserved = false,
  ): Promise<void> {
    this.#opts.onFailure?.(source);
    const key = this.#key(caller, kid);
    let state: RateLimiterRes | null;
    try {
      state = reserved ? await this.#limiter.get(key) : await this.#limiter.consume(key);
    } catch (err) {
      if (!(err instanceof RateLimiterRes)) throw err;
      state = err;
    }
    if (!state || state.consumedPoints < this.#opts.failures) return;
    const now = Date.now();
    if ((this.#reported.get(key) ?? 0) > now) return;
    for (const [k, until] of this.#reported) if (until <= now) this.#reported.delete(k);
    this.#reported.set(key, now + state.msBeforeNext);
    this.#opts.onExhausted?.({
      tenantId: caller.tenantId,
      principal: caller.principal,
      kid,
      source,
      failures: this.#opts.failures,
      windowSeconds: this.#opts.windowSeconds,
    });
  }
}

/** The 403 of a caller whose role lacks crypto.decrypt, given before any byte is decrypted. */
export function decryptionNotAllowed() {
  return problem(
    'forbidden',
    'converting or re-encrypting encrypted content decrypts it: the role needs crypto.decrypt as well',
    { details: { missing: ['crypto.decrypt'] } },
  );
}

function spent(state: RateLimiterRes) {
  return problem(
    'rate_limited',
    'too many failed decryptions with this key; retry later (DECRYPT_FAILURE_BUDGET)',
    { headers: { 'Retry-After': String(Math.max(1, Math.ceil(state.msBeforeNext / 1000))) } },
  );
}

/** What the budget reports to: the process's logger, metrics and (where it has one) audit log. */
export interface BudgetReporting {
  logger: Logger;
  metrics: Pick<DomainMetrics, 'decryptionFailure' | 'decryptionBudgetExhausted'>;
  audit?: Pick<AuditLog, 'record'>;
  redis?: Redis;
}

/** The process's budget from the config, reporting as every process does (API and worker alike). */
export function createDecryptionBudget(
  config: Pick<Config, 'decryptFailureBudget' | 'decryptFailureWindowSeconds'>,
  { logger, metrics, audit, redis }: BudgetReporting,
): DecryptionBudget {
  return new DecryptionBudget({
    failures: config.decryptFailureBudget,
    windowSeconds: config.decryptFailureWindowSeconds,
    redis,
    onFailure: (source) => metrics.decryptionFailure(source),
    onExhausted: (e) => {
      metrics.decryptionBudgetExhausted(e.source);
      logger.warn(
        {
          tenantId: e.tenantId,
          actor: e.principal,
          kid: e.kid,
          source: e.source,
          failures: e.failures,
        },
        `decryption-failure budget spent: ${e.failures} failed decryptions with one key; the principal's decryptions with it answer 429 for up to ${e.windowSeconds} s. Many at once may be a padding-oracle attempt: look at the principal's audit trail`,
      );
      audit?.record({
        tenantId: e.tenantId,
        actor: e.principal,
        action: 'crypto.decryption-budget.exhausted',
        outcome: 'denied',
        target: e.kid,
        details: { source: e.source, failures: e.failures, windowSeconds: e.windowSeconds },
      });
    },
  });
}
