/**
 * The per-principal cost budget of expensive work (docs/expensive-work.md): work whose cost the
 * caller sets (a PWRI password's PBKDF2 iterations, a key pair's size, a certificate chain) spends
 * `budget.spend(principal, kind, cost)` before it starts, 429 past it. Next to the decryption-
 * failure budget, which counts failures rather than cost; here so that the API, its threads'
 * owners and the workers can all spend it. The API's instance is `ctx.expensive.budget`.
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

/**
 * What expensive work is for, as the 429 names it. Key derivation and key
 * generation are spent here; certificate chains may be (another caller of spend).
 */
export type WorkKind = 'key-derivation' | 'key-generation' | 'certificate-chain';

/**
 * The caller-costed work an endpoint can trigger, as its route row declares it
 * (docs/expensive-work.md): a PWRI password's PBKDF2, a keystore's PKCS#12 or PBES2 derivation,
 * a key pair's generation, a SignedData's signer and chain checks. Each kind has a hostile driver
 * in test/integration/core/expensive-routes.test.ts; a row declaring a kind without one fails it.
 */
export const EXPENSIVE_KINDS = [
  'key-derivation',
  'keystore-derivation',
  'key-generation',
  'signer-chain',
] as const;
export type ExpensiveKind = (typeof EXPENSIVE_KINDS)[number];

/**
 * What a row declares: the kinds, and where they run when not in the API process that answers
 * it (a job's conversion runs in the queue worker, on its own pools and bounds).
 */
export interface ExpensiveDeclaration {
  kinds: readonly [ExpensiveKind, ...ExpensiveKind[]];
  runsIn?: 'api' | 'worker';
}

/**
 * Cost units: about a millisecond of one core on a small server, measured on the 2-core machine
 * the benches run on (docs/expensive-work.md has the figures). Only the order matters: the budget
 * must hold a legitimate caller's burst and stop a loop of the most expensive requests.
 */
export const WORK_COSTS = {
  /** PBKDF2: one unit per 1,000 iterations (HMAC-SHA-512, the slowest PRF, ~0.6 ms per 1,000). */
  pbkdf2: (iterations: number): number => Math.max(1, Math.ceil(iterations / 1000)),
  /** RSA key-pair generation by modulus size: its average, rounded up (the tail is long). */
  rsa: (bits: number): number => (bits <= 2048 ? 100 : bits <= 3072 ? 300 : 1000),
  /** EC pairs: 0.2 ms (P-256) to 2.4 ms (P-521). */
  ec: 1,
  /** Post-quantum and other generations the catalogue calls slow (SLH-DSA). */
  slow: 300,
  /**
   * A keystore's parse, charged before it starts: the most one parse may derive (the per-parse
   * cap of shared/keystore/pkcs12-kdf.ts, about 1.5 s of a core; twice that for a file of
   * certificates only, read again). What the parse did not use is given back after it.
   */
  keystoreMax: 3000,
} as const;

export interface WorkBudgetOptions {
  /** Units per principal per window. */
  units: number;
  windowSeconds: number;
  /** Shared by every instance when given; memory otherwise (one process). */
  redis?: Redis;
}

/**
 * The per-principal cost budget of expensive work. A fixed window of `units` per principal,
 * whatever the kind (one currency: CPU time), in Redis when the process has it.
 */
export class WorkBudget {
  readonly #limiter: RateLimiterAbstract;
  readonly #opts: WorkBudgetOptions;

  constructor(opts: WorkBudgetOptions) {
    this.#opts = opts;
    const settings = {
      keyPrefix: 'keyward:expensive-work',
      points: opts.units,
      duration: opts.windowSeconds,
    };
    this.#limiter = opts.redis
      ? new RateLimiterRedis({
          ...settings,
          storeClient: opts.redis,
          insuranceLimiter: new RateLimiterMemory(settings),
        })
      : new RateLimiterMemory(settings);
  }

  /** Hashed: an audit actor string names a user or client, which need not sit in Redis keys. */
  #key(principal: string): string {
    return createHash('sha256').update(principal).digest('base64url').slice(0, 32);
  }

  /**
   * Spends `cost` units of `principal`'s budget before the work starts, or throws the 429
   * rate_limited problem (LimitExceededException on the AWS KMS API) with Retry-After. A cost
   * larger than the whole budget is always refused.
   */
  async spend(principal: string, kind: WorkKind, cost: number): Promise<void> {
    const units = Math.max(1, Math.ceil(cost));
    try {
      if (units > this.#opts.units) throw new RateLimiterRes(0, 1000 * this.#opts.windowSeconds);
      await this.#limiter.consume(this.#key(principal), units);
    } catch (err) {
      if (!(err instanceof RateLimiterRes)) throw err;
      throw problem(
        'rate_limited',
        `the budget of expensive work (${kind}) of this caller is spent; retry later (EXPENSIVE_BUDGET)`,
        { headers: { 'Retry-After': String(Math.max(1, Math.ceil(err.msBeforeNext / 1000))) } },
      );
    }
  }

  /** Gives back what spend() took for work that never started (its client left, a full queue). */
  async refund(principal: string, cost: number): Promise<void> {
    await this.#limiter.reward(this.#key(principal), Math.max(1, Math.ceil(cost)));
  }
}
