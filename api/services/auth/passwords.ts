/**
 * Human password checks with lockout and backoff. Every failure looks the same to the caller
 * (unknown user, wrong password, locked, disabled). The lockout is per (account, client address)
 * and at most MAX_LOCKOUT_SECONDS: someone without the password, elsewhere, can lock out only
 * their own address, and the owner's login from another address still works.
 */
import type { Knex } from 'knex';
import type { WorkPool } from '../../threads/pool.ts';
import { Role } from '../../../shared/db/models/identities.ts';
import {
  clearLockout,
  isLockedOut,
  rateKey,
  recordWrongPassword,
  type RateLimits,
} from './rate-limits.ts';

/**
 * How long a verification takes here, as a moving average of the real ones. An unknown user or a
 * locked pair answers after this long without hashing: the same timing as a wrong password, no
 * CPU spent (a dummy hash per unknown name let a flood of made-up names take every worker thread,
 * and a legitimate login went from 0.07 s to about 1 s).
 */
let typicalVerifyMs = 40;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function timedVerify(pool: WorkPool, password: string, hash: string): Promise<boolean> {
  const start = performance.now();
  const ok = await pool.run<boolean>('verifyPassword', { password, hash });
  typicalVerifyMs += (performance.now() - start - typicalVerifyMs) / 8;
  return ok;
}

export interface UserIdentity {
  id: string;
  tenantId: string;
  email: string;
  permissions: string[];
}

export interface LockoutPolicy {
  limits: RateLimits;
  /** First lockout in seconds; doubles per further lockout of the pair that day. */
  baseSeconds: number;
}

/** Loads a user with the role's permissions; null when absent or disabled. */
export async function loadUser(
  db: Knex,
  where: { id: string } | { tenantId: string; email: string },
): Promise<
  | (UserIdentity & {
      passwordHash: string;
      lockedUntil: Date | null;
      disabled: boolean;
      failedAttempts: number;
      lockoutCount: number;
    })
  | null
> {
  // Raw knex, one join: this runs on the token endpoint (password grant) for every login.
  const q = db('users as u')
    .join('roles as r', 'r.id', 'u.role_id')
    .join('tenants as t', 't.id', 'u.tenant_id')
    .where('t.status', 'active');
  if ('id' in where) q.where('u.id', where.id);
  else q.where({ 'u.tenant_id': where.tenantId, 'u.email': where.email.toLowerCase() });
  const row = await q.first('u.*', 'r.permissions');
  if (!row) return null;
  return {
    id: row.id,
    tenantId: row.tenant_id,
    email: row.email,
    permissions: Role.fromDatabaseJson({ permissions: row.permissions }).permissions,
    passwordHash: row.password_hash,
    lockedUntil: row.locked_until ? new Date(row.locked_until) : null,
    disabled: row.disabled,
    failedAttempts: row.failed_attempts,
    lockoutCount: row.lockout_count,
  };
}

/** The lockout key of an (account, client address) pair. */
export const lockoutKey = (userId: string, address: string) => rateKey('user', userId, address);

/** Checks a password from `address`; returns the user on success and records failures for lockout. */
export async function checkPassword(
  db: Knex,
  pool: WorkPool,
  policy: LockoutPolicy,
  tenantId: string,
  email: string,
  password: string,
  address: string,
): Promise<{
  user: UserIdentity | null;
  reason?: 'unknown' | 'locked' | 'wrong-password' | 'disabled';
}> {
  const user = await loadUser(db, { tenantId, email });
  if (!user) {
    await sleep(typicalVerifyMs);
    return { user: null, reason: 'unknown' };
  }
  const key = lockoutKey(user.id, address);
  // Cheap checks before any hash: a locked pair costs no CPU and answers like the rest.
  if (await isLockedOut(policy.limits, key)) {
    await sleep(typicalVerifyMs);
    return { user: null, reason: 'locked' };
  }
  const ok = await timedVerify(pool, password, user.passwordHash);
  if (user.disabled) return { user: null, reason: 'disabled' };
  if (!ok) {
    await recordWrongPassword(policy.limits, key, policy.baseSeconds);
    return { user: null, reason: 'wrong-password' };
  }
  await clearLockout(policy.limits, key);
  return {
    user: {
      id: user.id,
      tenantId: user.tenantId,
      email: user.email,
      permissions: user.permissions,
    },
  };
}
