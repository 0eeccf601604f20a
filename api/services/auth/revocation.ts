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

/** The subject and not-before of a subject entry's jti; null for a token's own jti. */
function subjectEntry(jti: string): { sub: string; notBefore: number } | null {
  if (!jti.startsWith(SUBJECT)) return null;
  const at = jti.lastIndexOf(':');
  const notBefore = Number(jti.slice(at + 1));
  return Number.isInteger(notBefore) ? { sub: jti.slice(SUBJECT.length, at), notBefore } : null;
}

/**
 * The revoked tokens, revoked subjects and suspended tenants of a process, held in memory so that
 * the bearer check reads no database: loaded at open, then kept by the change feed.
 */
export class RevocationList {
  readonly #db: Knex;
  readonly #logger: Logger;
  readonly #feed: ChangeFeed;
  /** jti -> expiry (ms). */
  readonly #revoked = new Map<string, number>();
  /** sub -> not-before (unix s) of its tokens. */
  readonly #subjects = new Map<string, number>();
  readonly #listeners: Array<(jti: string) => void> = [];
  #suspended = new Set<string>();
  /** Tenant reads can overlap (a change arriving while one is under way): only the newest counts. */
  #generation = 0;
  #retry: NodeJS.Timeout | null = null;
  readonly #sweeper: NodeJS.Timeout;

  /** Loads unexpired revocations and suspended tenants, and follows the change feed for new ones. */
  static async open(db: Knex, logger: Logger, feed: ChangeFeed): Promise<RevocationList> {
    const list = new RevocationList(db, logger, feed);
    await list.#loadAll();
    await list.#refreshTenants();
    feed.on('token', (c) => {
      const exp = Number(c.data?.exp);
      list.#add(c.ref, Number.isFinite(exp) ? exp : Date.now() + 86_400_000);
    });
    feed.on('tenant', () => {
      if (list.#retry) clearTimeout(list.#retry);
      list.#refreshUntilDone();
    });
    feed.onResync(async () => {
      await list.#loadAll();
      await list.#refreshTenants();
    });
    return list;
  }

  private constructor(db: Knex, logger: Logger, feed: ChangeFeed) {
    this.#db = db;
    this.#logger = logger;
    this.#feed = feed;
    // Expired entries can go: the token would be refused for its expiry anyway.
    this.#sweeper = setInterval(() => this.#sweep(), 60_000);
    this.#sweeper.unref();
  }

  isRevoked(jti: string): boolean {
    return this.#revoked.has(jti);
  }

  /** True when tokens of `sub` issued at `iat` (unix seconds) are revoked with their subject. */
  isSubjectRevoked(sub: string, iat: number): boolean {
    const notBefore = this.#subjects.get(sub);
    return notBefore !== undefined && iat < notBefore;
  }

  /** Tokens of a suspended tenant stop working within a second, whatever their expiry. */
  isTenantSuspended(tenantId: string): boolean {
    return this.#suspended.has(tenantId);
  }

  /** True when the refresh-token family an access token came from was revoked (reuse detected). */
  isFamilyRevoked(familyId: string): boolean {
    return this.#revoked.has(`${FAMILY}${familyId}`);
  }

  /** Tells every instance that a tenant's status changed (suspend, resume). */
  async tenantChanged(tenantId: string): Promise<void> {
    await this.#refreshTenants();
    await this.#feed.record('tenant', tenantId);
  }

  async revoke(input: RevocationInput): Promise<void> {
    // The entry and its change commit together: an instance that misses the message reads it from the log.
    const change = await this.#db.transaction(async (trx) => {
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
      return this.#feed.write(trx, 'token', input.jti, { exp: input.expiresAt.getTime() });
    });
    this.#feed.announce(change);
  }

  /** Revokes every token of a subject issued until now, on every instance within a second. */
  async revokeSubject(input: SubjectRevocationInput): Promise<void> {
    const notBefore = Math.floor(Date.now() / 1000) + (input.strict ? 1 : 0);
    await this.revoke({
      jti: `${SUBJECT}${input.sub}:${notBefore}`,
      tenantId: input.tenantId,
      sub: input.sub,
      revokedBy: input.revokedBy,
      reason: input.reason,
      expiresAt: new Date((notBefore + input.maxTokenLifetimeSeconds) * 1000),
    });
  }

  /** Subscribers called with each newly revoked jti (the token cache evicts). */
  onRevoked(listener: (jti: string) => void): void {
    this.#listeners.push(listener);
  }

  async close(): Promise<void> {
    clearInterval(this.#sweeper);
    if (this.#retry) clearTimeout(this.#retry);
  }

  #add(jti: string, expiresAtMs: number): void {
    if (this.#revoked.has(jti)) return;
    this.#revoked.set(jti, expiresAtMs);
    const subject = subjectEntry(jti);
    if (subject && subject.notBefore > (this.#subjects.get(subject.sub) ?? 0))
      this.#subjects.set(subject.sub, subject.notBefore);
    for (const l of this.#listeners) l(jti);
  }

  async #loadAll(): Promise<void> {
    const rows = await RevokedToken.query(this.#db)
      .where('expires_at', '>', new Date())
      .select('jti', 'expires_at');
    for (const r of rows) this.#add(r.jti, new Date(r.expires_at).getTime());
  }

  async #refreshTenants(): Promise<void> {
    const mine = ++this.#generation;
    const ids = new Set(
      (await Tenant.query(this.#db).where({ status: 'suspended' }).select('id')).map((r) => r.id),
    );
    if (mine === this.#generation) this.#suspended = ids;
  }

  /**
   * A tenant change already counts as applied: a failed read is retried until it succeeds, so a
   * suspension is never left unenforced until some later change comes along.
   */
  #refreshUntilDone(): void {
    this.#refreshTenants().catch((err: Error) => {
      this.#logger.warn(
        { err: err.message },
        'reading suspended tenants failed; retrying in a second',
      );
      this.#retry = setTimeout(() => this.#refreshUntilDone(), 1000);
      this.#retry.unref();
    });
  }

  #sweep(): void {
    const now = Date.now();
    // Tokens are accepted up to 30 s past exp (clock leeway): keep the entry past that too.
    for (const [jti, exp] of this.#revoked) {
      if (exp + 60_000 >= now) continue;
      this.#revoked.delete(jti);
      const subject = subjectEntry(jti);
      if (subject && this.#subjects.get(subject.sub) === subject.notBefore)
        this.#subjects.delete(subject.sub);
    }
  }
}
