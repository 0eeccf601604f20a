/**
 * Human password checks with lockout and backoff. Every failure looks the same to the caller
 * (unknown user, wrong password, locked, disabled), and an unknown user still costs one argon2id
 * verification so timing does not tell whether the address exists.
 */
import type { Knex } from 'knex';
import type { WorkPool } from '../../../workers/pool.ts';
import { jsonColumn } from '../../../shared/db/knex.ts';

/** A precomputed hash of a random password, verified when the user does not exist. */
const DUMMY_HASH = '$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$YWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWE';

export interface UserIdentity {
  id: string;
  tenantId: string;
  email: string;
  permissions: string[];
}

export interface LockoutPolicy {
  threshold: number;
  baseSeconds: number;
}

/** Loads a user with the role's permissions; null when absent or disabled. */
export async function loadUser(db: Knex, where: { id: string } | { tenantId: string; email: string }): Promise<(UserIdentity & { passwordHash: string; lockedUntil: Date | null; disabled: boolean; failedAttempts: number; lockoutCount: number }) | null> {
  const q = db('users as u').join('roles as r', 'r.id', 'u.role_id').join('tenants as t', 't.id', 'u.tenant_id').where('t.status', 'active');
  if ('id' in where) q.where('u.id', where.id);
  else q.where({ 'u.tenant_id': where.tenantId, 'u.email': where.email.toLowerCase() });
  const row = await q.first('u.*', 'r.permissions');
  if (!row) return null;
  return {
    id: row.id, tenantId: row.tenant_id, email: row.email,
    permissions: jsonColumn(row.permissions),
    passwordHash: row.password_hash, lockedUntil: row.locked_until ? new Date(row.locked_until) : null, disabled: row.disabled,
    failedAttempts: row.failed_attempts, lockoutCount: row.lockout_count,
  };
}

/** Checks a password; returns the user on success and records failures for lockout. */
export async function checkPassword(db: Knex, pool: WorkPool, policy: LockoutPolicy, tenantId: string, email: string, password: string): Promise<{ user: UserIdentity | null; reason?: 'unknown' | 'locked' | 'wrong-password' | 'disabled' }> {
  const user = await loadUser(db, { tenantId, email });
  if (!user) {
    await pool.run('verifyPassword', { password, hash: DUMMY_HASH });
    return { user: null, reason: 'unknown' };
  }
  const ok = await pool.run<boolean>('verifyPassword', { password, hash: user.passwordHash });
  if (user.lockedUntil && user.lockedUntil.getTime() > Date.now()) return { user: null, reason: 'locked' };
  if (user.disabled) return { user: null, reason: 'disabled' };
  if (!ok) {
    // Atomic increment: concurrent guesses must each count (a read-then-write loses them).
    const [row] = await db('users').where({ id: user.id }).update({ failed_attempts: db.raw('failed_attempts + 1') }).returning(['failed_attempts', 'lockout_count']);
    if (row && row.failed_attempts >= policy.threshold) {
      // Backoff: each further lockout doubles the wait.
      const seconds = policy.baseSeconds * 2 ** Math.min(row.lockout_count, 10);
      await db('users').where({ id: user.id }).where('failed_attempts', '>=', policy.threshold)
        .update({ failed_attempts: 0, lockout_count: db.raw('lockout_count + 1'), locked_until: new Date(Date.now() + seconds * 1000) });
    }
    return { user: null, reason: 'wrong-password' };
  }
  if (user.failedAttempts > 0 || user.lockoutCount > 0) await db('users').where({ id: user.id }).update({ failed_attempts: 0, lockout_count: 0, locked_until: null });
  return { user: { id: user.id, tenantId: user.tenantId, email: user.email, permissions: user.permissions } };
}
