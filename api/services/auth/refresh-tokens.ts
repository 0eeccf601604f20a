/**
 * Refresh tokens: opaque random strings stored only as SHA-256 hashes, rotated on every use
 * (OAuth 2.0 Security BCP, RFC 9700 4.14.2). Presenting an already used token means it was
 * stolen or replayed, so the whole family is revoked.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { RefreshToken } from '../../../shared/db/models/tokens.ts';

export interface RefreshSubject {
  tenantId: string;
  subjectKind: 'user' | 'workload';
  subjectId: string;
  audience: string;
  rememberMe: boolean;
}

export type RedeemResult =
  | { ok: true; subject: RefreshSubject; familyId: string }
  | {
      ok: false;
      reason: 'unknown' | 'expired' | 'revoked' | 'reused';
      familyId?: string;
      tenantId?: string;
    };

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

/** Issues a refresh token in a (new or existing) family; returns the raw token once. */
export async function issueRefreshToken(
  db: Knex,
  subject: RefreshSubject,
  ttlSeconds: number,
  familyId: string = randomUUID(),
): Promise<string> {
  const token = `rt_${randomBytes(32).toString('base64url')}`;
  await RefreshToken.query(db).insert({
    token_hash: sha256(token),
    family_id: familyId,
    tenant_id: subject.tenantId,
    subject_kind: subject.subjectKind,
    subject_id: subject.subjectId,
    audience: subject.audience,
    remember_me: subject.rememberMe,
    expires_at: new Date(Date.now() + ttlSeconds * 1000),
  });
  return token;
}

/** Marks a refresh token used (atomically) and returns its subject; reuse revokes the family. */
export async function redeemRefreshToken(
  db: Knex,
  token: string,
  onlyAudience?: string,
): Promise<RedeemResult> {
  const hash = sha256(token);
  return db.transaction(async (trx) => {
    const row = await RefreshToken.query(trx).findOne({ token_hash: hash }).forUpdate();
    // A refresh token renews only within its own API family (the legacy route takes legacy ones).
    if (!row || (onlyAudience && row.audience !== onlyAudience))
      return { ok: false, reason: 'unknown' } as const;
    if (row.revoked_at)
      return {
        ok: false,
        reason: 'revoked',
        familyId: row.family_id,
        tenantId: row.tenant_id,
      } as const;
    if (row.used_at) {
      await RefreshToken.query(trx)
        .where({ family_id: row.family_id })
        .whereNull('revoked_at')
        .patch({ revoked_at: new Date() });
      return {
        ok: false,
        reason: 'reused',
        familyId: row.family_id,
        tenantId: row.tenant_id,
      } as const;
    }
    if (new Date(row.expires_at).getTime() <= Date.now())
      return { ok: false, reason: 'expired', tenantId: row.tenant_id } as const;
    await RefreshToken.query(trx).findById(hash).patch({ used_at: new Date() });
    return {
      ok: true,
      familyId: row.family_id,
      subject: {
        tenantId: row.tenant_id,
        subjectKind: row.subject_kind,
        subjectId: row.subject_id,
        audience: row.audience,
        rememberMe: row.remember_me,
      },
    } as const;
  });
}

/** Revokes every refresh-token family of a subject (password reset, disable, delete). */
export async function revokeSubjectRefreshTokens(db: Knex, subjectId: string): Promise<void> {
  await RefreshToken.query(db)
    .where({ subject_id: subjectId })
    .whereNull('revoked_at')
    .patch({ revoked_at: new Date() });
}

/** Revokes the family of a refresh token (RFC 7009 revocation of a refresh token). */
export async function revokeRefreshFamily(
  db: Knex,
  token: string,
): Promise<{ tenantId: string; familyId: string } | null> {
  const row = await RefreshToken.query(db).findById(sha256(token)).select('family_id', 'tenant_id');
  if (!row) return null;
  await RefreshToken.query(db)
    .where({ family_id: row.family_id })
    .whereNull('revoked_at')
    .patch({ revoked_at: new Date() });
  return { tenantId: row.tenant_id, familyId: row.family_id };
}

/** The family of a refresh token, or null when it names none: the key of its rate budget (used, revoked and expired tokens keep theirs). */
export async function refreshFamilyOf(db: Knex, token: string): Promise<string | null> {
  const row = await RefreshToken.query(db).findById(sha256(token)).select('family_id');
  return row?.family_id ?? null;
}
