/** Human users of a tenant (`admin.humanuser`): full CRUD and admin-triggered password resets; password hashes never leave. */
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { AppContext } from '../../context.ts';
import { problem } from '../../../shared/errors/index.ts';
import { User } from '../../../shared/db/models/identities.ts';
import { pageOf, type Page, type PageRequest } from '../../../shared/db/page.ts';
import { startPasswordReset } from '../auth/password-reset.ts';
import { revokeSubjectRefreshTokens } from '../auth/refresh-tokens.ts';
import { requireRole } from './roles.ts';
import type { NewUserBody, UserChangeBody, UserView } from '../../schemas/users.ts';

// eslint-disable-next-line no-control-regex
const EMAIL = /^[^\s@\u0000-\u001f]+@[^\s@\u0000-\u001f]+$/;

/** The API shape of a user (never the password hash). */
export const userView = (u: User): UserView => ({
  id: u.id,
  tenantId: u.tenant_id,
  email: u.email,
  roleId: u.role_id,
  disabled: Boolean(u.disabled),
  lockedUntil: u.locked_until ? new Date(u.locked_until).toISOString() : null,
  createdAt: new Date(u.created_at).toISOString(),
  updatedAt: new Date(u.updated_at).toISOString(),
});

/** Creates a human user with an argon2id password hash. */
export async function createUser(
  ctx: Pick<AppContext, 'db' | 'pool'>,
  tenantId: string,
  input: NewUserBody,
): Promise<UserView> {
  // The row's schema bounds the length; the form of an address is checked here.
  if (!EMAIL.test(input.email) || input.email.length > 254)
    throw problem('validation_failed', 'email must be an e-mail address');
  if (input.password.length < 12)
    throw problem('validation_failed', 'password must be at least 12 characters');
  const roleId = await requireRole(ctx.db, tenantId, input.roleId);
  const email = input.email.toLowerCase();
  if (await User.query(ctx.db).findOne({ tenant_id: tenantId, email }))
    throw problem('conflict', 'a user with that e-mail exists in this tenant');
  const passwordHash = await ctx.pool.run<string>('hashPassword', { password: input.password });
  const now = new Date();
  const user = await User.query(ctx.db).insert({
    id: randomUUID(),
    tenant_id: tenantId,
    email,
    password_hash: passwordHash,
    role_id: roleId,
    disabled: false,
    locked_until: null,
    created_at: now,
    updated_at: now,
  });
  return userView(user);
}

/** One page of a tenant's users. */
export const listUsers = (db: Knex, tenantId: string, page: PageRequest): Promise<Page<UserView>> =>
  pageOf(User.query(db).where({ tenant_id: tenantId }), 'id', page, userView);

/** A user of the tenant; 404 when there is none. */
export async function findUser(db: Knex, tenantId: string, id: string): Promise<User> {
  const user = await User.query(db).findOne({ id, tenant_id: tenantId });
  if (!user) throw problem('not_found', 'no such user');
  return user;
}

/** A user as the API shows it. */
export const readUser = async (db: Knex, tenantId: string, id: string): Promise<UserView> =>
  userView(await findUser(db, tenantId, id));

/**
 * Changes a user's role or disables/enables it. Disabling ends its sessions (refresh and access
 * tokens, everywhere); a new role ends its access tokens, which carry the old role's permissions.
 */
export async function updateUser(
  ctx: AppContext,
  tenantId: string,
  id: string,
  input: UserChangeBody,
  actor: string,
): Promise<UserView> {
  const user = await findUser(ctx.db, tenantId, id);
  const patch: Partial<Pick<User, 'role_id' | 'disabled' | 'updated_at'>> = {
    updated_at: new Date(),
  };
  if (input.roleId !== undefined) patch.role_id = await requireRole(ctx.db, tenantId, input.roleId);
  if (input.disabled !== undefined) patch.disabled = input.disabled;
  const [row] = await User.query(ctx.db).where({ id: user.id }).patch(patch).returning('*');
  if (patch.disabled === true) {
    await revokeSubjectRefreshTokens(ctx.db, user.id);
    await ctx.auth.revokeSubjectTokens({
      tenantId: user.tenant_id,
      sub: user.id,
      revokedBy: actor,
      reason: 'user disabled',
      strict: true,
    });
  } else if (patch.role_id !== undefined && patch.role_id !== user.role_id) {
    await ctx.auth.revokeSubjectTokens({
      tenantId: user.tenant_id,
      sub: user.id,
      revokedBy: actor,
      reason: 'user role changed',
      strict: true,
    });
  }
  return userView(row);
}

/** Deletes a user after ending every session it holds. */
export async function deleteUser(
  ctx: AppContext,
  tenantId: string,
  id: string,
  actor: string,
): Promise<void> {
  const user = await findUser(ctx.db, tenantId, id);
  await revokeSubjectRefreshTokens(ctx.db, user.id);
  await ctx.auth.revokeSubjectTokens({
    tenantId: user.tenant_id,
    sub: user.id,
    revokedBy: actor,
    reason: 'user deleted',
    strict: true,
  });
  await User.query(ctx.db).deleteById(user.id);
}

/** Mails the user a reset link (admin-triggered); returns the user's id for the audit. */
export async function resetUserPassword(
  ctx: AppContext,
  tenantId: string,
  id: string,
): Promise<string> {
  const user = await findUser(ctx.db, tenantId, id);
  await startPasswordReset(ctx.db, ctx.auth.mailer, ctx.config.publicBaseUrl, user);
  return user.id;
}
