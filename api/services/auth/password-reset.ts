/**
 * Forgot-password and admin-triggered resets: a single-use token valid 30 minutes, stored as a
 * hash, delivered through the Mailer. The start answers the same whether or not the address is
 * known (no account enumeration).
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { Logger } from '../../../shared/logger.ts';
import { problem } from '../../../shared/errors/index.ts';
import { OutboxMail, PasswordReset, User } from '../../../shared/db/models/identities.ts';
import { RefreshToken } from '../../../shared/db/models/tokens.ts';

const TTL_MS = 30 * 60 * 1000;
const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

/** Sends mail; the default writes to the outbox table and logs that it did (never the link). */
export interface Mailer {
  send(mail: { to: string; subject: string; body: string }): Promise<void>;
}

/** The default mailer: outbox table plus a log line. */
export function outboxMailer(db: Knex, logger: Logger): Mailer {
  return {
    async send(mail) {
      const row = await OutboxMail.query(db).insert({
        recipient: mail.to,
        subject: mail.subject,
        body: mail.body,
      });
      logger.info(
        { to: mail.to, outboxId: row.id, subject: mail.subject },
        'mail queued in outbox',
      );
    },
  };
}

/** Creates a reset for a user and mails the link; returns nothing a caller could leak. */
export async function startPasswordReset(
  db: Knex,
  mailer: Mailer,
  baseUrl: string,
  user: { id: string; email: string },
): Promise<void> {
  const token = randomBytes(32).toString('base64url');
  await PasswordReset.query(db).insert({
    id: randomUUID(),
    user_id: user.id,
    token_hash: sha256(token),
    expires_at: new Date(Date.now() + TTL_MS),
  });
  await mailer.send({
    to: user.email,
    subject: 'Keyward password reset',
    body: `A password reset was requested for ${user.email}. It is valid for 30 minutes and can be used once.\n\nPOST ${baseUrl}/api/v3/auth/password/reset with token=${token} and password=<new password>\n`,
  });
}

const invalidToken = () =>
  problem('invalid_reset_token', 'the reset token is unknown, used or expired');

/** The unused, unexpired reset a token names, or null: one indexed read, no hashing. */
export async function pendingReset(db: Knex, token: string): Promise<{ id: string } | null> {
  const reset = await PasswordReset.query(db)
    .findOne({ token_hash: sha256(token) })
    .select('id', 'used_at', 'expires_at');
  return reset && !reset.used_at && new Date(reset.expires_at).getTime() > Date.now()
    ? { id: reset.id as string }
    : null;
}

/**
 * Completes a reset: single use, unexpired; sets the new argon2id hash and clears lockout. The
 * token and the password length are checked before the hash (`hash`, which runs it in the
 * budget of unauthenticated hashing): a made-up token costs no CPU.
 */
export async function completePasswordReset(
  db: Knex,
  hash: (password: string) => Promise<string>,
  token: string,
  newPassword: string,
): Promise<{ userId: string; tenantId: string }> {
  if (newPassword.length < 12)
    throw problem('validation_failed', 'the new password must be at least 12 characters');
  if (!(await pendingReset(db, token))) throw invalidToken();
  const passwordHash = await hash(newPassword);
  return db.transaction(async (trx) => {
    // Checked again under the row lock: two requests with one token, only one wins.
    const reset = await PasswordReset.query(trx)
      .findOne({ token_hash: sha256(token) })
      .forUpdate();
    if (!reset || reset.used_at || new Date(reset.expires_at).getTime() <= Date.now())
      throw invalidToken();
    await PasswordReset.query(trx).findById(reset.id).patch({ used_at: new Date() });
    await User.query(trx).findById(reset.user_id).patch({
      password_hash: passwordHash,
      failed_attempts: 0,
      lockout_count: 0,
      locked_until: null,
      updated_at: new Date(),
    });
    // A new password ends every session the old one started.
    await RefreshToken.query(trx)
      .where({ subject_id: reset.user_id })
      .whereNull('revoked_at')
      .patch({ revoked_at: new Date() });
    const user = (await User.query(trx).findById(reset.user_id).select('tenant_id'))!;
    return { userId: reset.user_id, tenantId: user.tenant_id };
  });
}
