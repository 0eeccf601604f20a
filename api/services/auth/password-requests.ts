/**
 * The unauthenticated password endpoints: forgot (mail a reset link) and reset (set a
 * new password with the link's token). Both answer alike for known and unknown accounts, and
 * spend budgets keyed so that a flood costs its sender, not the account owner.
 */
import type { AppContext } from '../../context.ts';
import { AppError, OAuthError } from '../../../shared/errors/index.ts';
import { isUuid } from '../../../shared/ids.ts';
import { isRateLimited, rateKey, retryAfterSeconds, withAuthBudget } from './rate-limits.ts';
import { completePasswordReset, pendingReset, startPasswordReset } from './password-reset.ts';
import { loadUser } from './passwords.ts';
import { userActor } from '../../../shared/audit/actor.ts';

/**
 * Forgot-password: checks the request and the sender address's budget, then hands everything
 * about the account (the per-account budgets, the lookup, the reset token, the mail, the audit
 * event) to a background task, so the caller answers before any of it runs: the same work, in
 * the same order, before the answer for a registered address as for any other: answering
 * a known address only after its mail was handed over would tell which addresses are registered.
 */
export async function forgotPassword(
  ctx: AppContext,
  input: { email?: string; tenantId?: string },
  address: string,
): Promise<void> {
  const { email, tenantId } = input;
  if (!email || !tenantId)
    throw new OAuthError('invalid_request', 'email and tenant_id are required');
  // Per address: a flood from one client answers 429 (that says nothing about any account).
  try {
    await ctx.auth.limits.forgot.consume(rateKey('address', address));
  } catch (err) {
    if (isRateLimited(err))
      throw new OAuthError(
        'too_many_requests',
        'too many password reset requests; retry later',
        429,
        { 'Retry-After': String(retryAfterSeconds(err)) },
      );
    throw err;
  }
  ctx.background.run('password reset mail', () => mailResetLink(ctx, tenantId, email));
}

/** Starts a reset for the account, if there is one and its budgets allow; runs after the answer. */
async function mailResetLink(ctx: AppContext, tenantId: string, email: string): Promise<void> {
  await withAuthBudget(
    ctx.auth.limits,
    rateKey('forgot', tenantId.toLowerCase(), email.toLowerCase()),
    async () => {
      const user = isUuid(tenantId) ? await loadUser(ctx.db, { tenantId, email }) : null;
      // Per account: beyond a few mails an hour no mail goes out, so the budget neither floods
      // the owner's mailbox nor (the answer being long written) tells who is registered.
      const mailAllowed = user
        ? await ctx.auth.limits.resetMails.consume(rateKey('forgot', user.tenantId, user.id)).then(
            () => true,
            (err) => {
              if (isRateLimited(err)) return false;
              throw err;
            },
          )
        : false;
      if (user && !user.disabled && !mailAllowed)
        ctx.logger.warn(
          { tenantId: user.tenantId, userId: user.id },
          'password reset mail budget spent for this account; request answered, no mail sent',
        );
      if (user && !user.disabled && mailAllowed) {
        await startPasswordReset(ctx.db, ctx.auth.mailer, ctx.config.publicBaseUrl, user);
        ctx.audit.record({
          tenantId: user.tenantId,
          actor: userActor(user.id),
          action: 'auth.password.forgot',
          outcome: 'success',
        });
      }
    },
  );
}

/** Sets a new password with a reset token; the old password's access tokens end with it. */
export async function resetPassword(
  ctx: AppContext,
  input: { token?: string; password?: string },
  address: string,
): Promise<void> {
  const { token, password } = input;
  if (!token || !password)
    throw new OAuthError('invalid_request', 'token and password are required');
  // A pending reset has its own budget; made-up tokens spend their sender's address's.
  const pending = await pendingReset(ctx.db, token);
  const key = pending ? rateKey('reset', pending.id) : rateKey('address', address);
  // Unauthenticated hashing runs in its bounded budget, so a reset flood cannot slow logins.
  const hash = (p: string) =>
    ctx.auth.hashBudget.run(() => ctx.pool.run<string>('hashPassword', { password: p }));
  await withAuthBudget(
    ctx.auth.limits,
    key,
    async () => {
      try {
        const done = await completePasswordReset(ctx.db, hash, token, password);
        await ctx.auth.revokeSubjectTokens({
          tenantId: done.tenantId,
          sub: done.userId,
          revokedBy: userActor(done.userId),
          reason: 'password reset',
          strict: false,
        });
        ctx.audit.record({
          tenantId: done.tenantId,
          actor: userActor(done.userId),
          action: 'auth.password.reset',
          outcome: 'success',
        });
      } catch (err) {
        if (err instanceof AppError && err.status < 500)
          throw new OAuthError('invalid_request', err.message);
        throw err;
      }
    },
    (err) => err instanceof OAuthError && err.error === 'invalid_request',
  );
}
