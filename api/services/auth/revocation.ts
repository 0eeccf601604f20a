/**
 * The revoked-token list, held in memory so bearer checks never touch the database. A
 * revocation is written to the database together with its row in the change log, in one
 * transaction, and reaches every instance through the change feed (shared/fanout/change-feed.ts):
 * within milliseconds over Redis, within a poll period when a message is lost.
 *
 * A subject (a user or workload) is revoked the same way, as one entry whose jti is
 * `subject:<sub>:<not-before, unix seconds>`: every token of that subject issued before then is
 * refused, wherever it is cached, while tokens issued later (after a password reset) work.
 */
import type { Knex } from 'knex';
import type { Logger } from '../../../shared/logger.ts';
import type { ChangeFeed } from '../../../shared/fanout/change-feed.ts';
import { RevokedToken } from '../../../shared/db/models/tokens.ts';
import { Tenant } from '../../../shared/db/models/tenants.ts';

const SUBJECT = 'subject:';
/** A refresh-token family's entry: every access token issued from the family is refused. */
export const FAMILY = 'family:';

export interface RevocationInput {
  jti: string;
  tenantId: string | null;
  sub: string | null;
  expiresAt: Date;
  revokedBy: string | null;
  reason: string;
}

export interface SubjectRevocationInput {
  tenantId: string;
  sub: string;
  revokedBy: string | null;
  reason: string;
  /** The longest lifetime a token of this subject can have, in seconds: the entry lasts that long. */
  maxTokenLifetimeSeconds: number;
  /**
   * true (disable, delete): tokens issued in the current second are refused too, since no new
   * token is legitimate. false (password reset): they pass, so a sign-in right after the reset
   * works; iat has one-second precision.
   */
  strict: boolean;
}

export interface RevocationList {
  isRevoked(jti: string): boolean;
  /** True when tokens of `sub` issued at `iat` (unix seconds) are revoked with their subject. */
  isSubjectRevoked(sub: string, iat: number): boolean;
  /** Tokens of a suspended tenant stop working within a second, whatever their expiry. */
  isTenantSuspended(tenantId: string): boolean;
  /** Tells every instance that a tenant's status changed (suspend, resume). */
  tenantChanged(tenantId: string): Promise<void>;
  /** True when the refresh-token family an access token came from was revoked (reuse detected). */
  isFamilyRevoked(familyId: string): boolean;
  revoke(input: RevocationInput): Promise<void>;
  /** Revokes every token of a subject issued until now, on every instance within a second. */
  revokeSubject(input: SubjectRevocationInput): Promise<void>;
  /** Subscribers called with each newly revoked jti (the token cache evicts). */
  onRevoked(listener: (jti: string) => void): void;
  close(): Promise<void>;
}

/** The subject and not-before of a subject entry's jti; null for a token's own jti. */
function subjectEntry(jti: string): { sub: string; notBefore: number } | null {
  if (!jti.startsWith(SUBJECT)) return null;
  const at = jti.lastIndexOf(':');
  const notBefore = Number(jti.slice(at + 1));
  return Number.isInteger(notBefore) ? { sub: jti.slice(SUBJECT.length, at), notBefore } : null;
}

/** Loads unexpired revocations and follows the change feed for new ones. */
export async function createRevocationList(
  db: Knex,
  logger: Logger,
  feed: ChangeFeed,
): Promise<RevocationList> {
  const revoked = new Map<string, number>(); // jti → expiry (ms)
  const subjects = new Map<string, number>(); // sub → not-before (unix s) of its tokens
  const listeners: Array<(jti: string) => void> = [];

  function add(jti: string, expiresAtMs: number): void {
    if (revoked.has(jti)) return;
    revoked.set(jti, expiresAtMs);
    const subject = subjectEntry(jti);
    if (subject && subject.notBefore > (subjects.get(subject.sub) ?? 0))
      subjects.set(subject.sub, subject.notBefore);
    for (const l of listeners) l(jti);
  }

  async function loadAll(): Promise<void> {
    const rows = await RevokedToken.query(db)
      .where('expires_at', '>', new Date())
      .select('jti', 'expires_at');
    for (const r of rows) add(r.jti, new Date(r.expires_at).getTime());
  }
  await loadAll();

  let suspended = new Set<string>();
  // Runs can overlap (a change arriving while one is under way): only the newest one's answer counts.
  let generation = 0;
  const refreshTenants = async () => {
    const mine = ++generation;
    const ids = new Set(
      (await Tenant.query(db).where({ status: 'suspended' }).select('id')).map((r) => r.id),
    );
    if (mine === generation) suspended = ids;
  };
  // A tenant change already counts as applied: a failed read is retried until it succeeds, so a
  // suspension is never left unenforced until some later change comes along.
  let retry: NodeJS.Timeout | null = null;
  const refreshUntilDone = () => {
    refreshTenants().catch((err) => {
      logger.warn({ err: err.message }, 'reading suspended tenants failed; retrying in a second');
      retry = setTimeout(refreshUntilDone, 1000);
      retry.unref();
    });
  };
  await refreshTenants();

  feed.on('token', (c) => {
    const exp = Number(c.data?.exp);
    add(c.ref, Number.isFinite(exp) ? exp : Date.now() + 86_400_000);
  });
  feed.on('tenant', () => {
    if (retry) clearTimeout(retry);
    refreshUntilDone();
  });
  feed.onResync(async () => {
    await loadAll();
    await refreshTenants();
  });

  // Expired entries can go: the token would be refused for its expiry anyway.
  const sweeper = setInterval(() => {
    const now = Date.now();
    // Tokens are accepted up to 30 s past exp (clock leeway): keep the entry past that too.
    for (const [jti, exp] of revoked) {
      if (exp + 60_000 >= now) continue;
      revoked.delete(jti);
      const subject = subjectEntry(jti);
      if (subject && subjects.get(subject.sub) === subject.notBefore) subjects.delete(subject.sub);
    }
  }, 60_000);
  sweeper.unref();

  async function revoke(input: RevocationInput): Promise<void> {
    // The entry and its change commit together: an instance that misses the message reads it from the log.
    const change = await db.transaction(async (trx) => {
      await RevokedToken.query(trx)
        .insert({
          jti: input.jti,
          tenant_id: input.tenantId,
          sub: input.sub,
          expires_at: input.expiresAt,
          revoked_by: input.revokedBy,
          reason: input.reason,
        })
        .onConflict('jti')
        .ignore();
      return feed.write(trx, 'token', input.jti, { exp: input.expiresAt.getTime() });
    });
    feed.announce(change);
  }

  return {
    isRevoked: (jti) => revoked.has(jti),
    isSubjectRevoked: (sub, iat) => {
      const notBefore = subjects.get(sub);
      return notBefore !== undefined && iat < notBefore;
    },
    isTenantSuspended: (tenantId) => suspended.has(tenantId),
    isFamilyRevoked: (familyId) => revoked.has(`${FAMILY}${familyId}`),
    async tenantChanged(tenantId) {
      await refreshTenants();
      await feed.record('tenant', tenantId);
    },
    revoke,
    async revokeSubject(input) {
      const notBefore = Math.floor(Date.now() / 1000) + (input.strict ? 1 : 0);
      await revoke({
        jti: `${SUBJECT}${input.sub}:${notBefore}`,
        tenantId: input.tenantId,
        sub: input.sub,
        revokedBy: input.revokedBy,
        reason: input.reason,
        expiresAt: new Date((notBefore + input.maxTokenLifetimeSeconds) * 1000),
      });
    },
    onRevoked(listener) {
      listeners.push(listener);
    },
    async close() {
      clearInterval(sweeper);
      if (retry) clearTimeout(retry);
    },
  };
}
