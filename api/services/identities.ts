/**
 * Use cases for tenants, roles, workloads and users, shared by the admin routes, the bootstrap
 * and tests. They validate, write, audit nothing (callers audit with their actor) and return
 * the API shape (camelCase).
 */
import { randomUUID } from 'node:crypto';
import type { AppContext } from '../context.ts';
import { AppError } from '../../shared/errors/index.ts';
import { isPermission, isPlatformPermission } from '../../shared/permissions.ts';
import { isUuid, unfitText } from '../../shared/ids.ts';
import { jsonColumn } from '../../shared/db/knex.ts';

export interface TenantView { id: string; name: string; status: string; isPlatform: boolean; createdAt: string }
export interface RoleView { id: string; tenantId: string; name: string; permissions: string[]; createdAt: string }
export interface WorkloadView { id: string; tenantId: string; name: string; clientId: string; roleId: string; disabled: boolean; createdAt: string }

const iso = (d: unknown) => new Date(d as string).toISOString();

export const tenantView = (r: Record<string, unknown>): TenantView => ({ id: r.id as string, name: r.name as string, status: r.status as string, isPlatform: Boolean(r.is_platform), createdAt: iso(r.created_at) });
export const roleView = (r: Record<string, unknown>): RoleView => ({ id: r.id as string, tenantId: r.tenant_id as string, name: r.name as string, permissions: jsonColumn<string[]>(r.permissions), createdAt: iso(r.created_at) });
export const workloadView = (r: Record<string, unknown>): WorkloadView => ({ id: r.id as string, tenantId: r.tenant_id as string, name: r.name as string, clientId: r.client_id as string, roleId: r.role_id as string, disabled: Boolean(r.disabled), createdAt: iso(r.created_at) });

function requireName(name: unknown, what: string): string {
  if (typeof name !== 'string' || name.trim() === '' || name.length > 200) throw new AppError('validation_failed', `${what} needs a name of 1 to 200 characters`);
  // The HTTP entry refuses these already; bootstrap and tests call the services directly.
  const unfit = unfitText(name);
  if (unfit) throw new AppError('validation_failed', `${what} name ${unfit}`);
  return name.trim();
}

/** Creates a tenant. */
export async function createTenant(ctx: AppContext, input: { name: unknown }): Promise<TenantView> {
  const row = { id: randomUUID(), name: requireName(input.name, 'a tenant'), status: 'active', is_platform: false, created_at: new Date() };
  await ctx.db('tenants').insert(row);
  return tenantView(row);
}

/** Creates a role whose permissions come from the catalogue; only the platform tenant may hold platform permissions. */
export async function createRole(ctx: AppContext, tenantId: string, input: { name: unknown; permissions: unknown }): Promise<RoleView> {
  const name = requireName(input.name, 'a role');
  if (!Array.isArray(input.permissions) || !input.permissions.every((p) => typeof p === 'string')) throw new AppError('validation_failed', 'permissions must be an array of strings');
  const permissions = [...new Set(input.permissions as string[])];
  const unknown = permissions.filter((p) => !isPermission(p));
  if (unknown.length) throw new AppError('validation_failed', `unknown permissions: ${unknown.join(', ')}`, { details: { unknownPermissions: unknown } });
  const tenant = await ctx.db('tenants').where({ id: tenantId }).first();
  if (!tenant) throw new AppError('not_found', 'no such tenant');
  if (!tenant.is_platform && permissions.some(isPlatformPermission)) throw new AppError('validation_failed', 'a tenant role cannot hold admin.platform.* permissions');
  if (await ctx.db('roles').where({ tenant_id: tenantId, name }).first('id')) throw new AppError('conflict', `a role named ${name} exists`);
  const row = { id: randomUUID(), tenant_id: tenantId, name, permissions: JSON.stringify(permissions), created_at: new Date() };
  await ctx.db('roles').insert(row);
  return roleView(row);
}

async function requireRole(ctx: AppContext, tenantId: string, roleId: unknown): Promise<string> {
  if (typeof roleId !== 'string' || !isUuid(roleId) || !(await ctx.db('roles').where({ id: roleId, tenant_id: tenantId }).first('id'))) {
    throw new AppError('validation_failed', 'roleId must name a role of this tenant');
  }
  return roleId;
}

/** Registers a workload once per app and tenant; the secret is returned only here. */
export async function registerWorkload(ctx: AppContext, tenantId: string, input: { name: unknown; roleId: unknown }): Promise<WorkloadView & { clientSecret: string }> {
  const name = requireName(input.name, 'a workload');
  const roleId = await requireRole(ctx, tenantId, input.roleId);
  if (await ctx.db('workloads').where({ tenant_id: tenantId, name }).first('id')) throw new AppError('conflict', `workload ${name} is already registered in this tenant`);
  const { secret, hash } = ctx.auth.secrets.generate();
  const row = { id: randomUUID(), tenant_id: tenantId, name, client_id: randomUUID(), role_id: roleId, disabled: false, created_at: new Date() };
  await ctx.db.transaction(async (trx) => {
    await trx('workloads').insert(row);
    await trx('workload_secrets').insert({ id: randomUUID(), workload_id: row.id, secret_hash: hash });
  });
  return { ...workloadView(row), clientSecret: secret };
}

/** Issues a new secret; the old ones stay valid for the grace period, then are refused. */
export async function rotateWorkloadSecret(ctx: AppContext, tenantId: string, workloadId: string, graceSeconds = ctx.config.secretGraceSeconds): Promise<{ clientId: string; clientSecret: string; previousValidUntil: string }> {
  const workload = await ctx.db('workloads').where({ id: workloadId, tenant_id: tenantId }).first();
  if (!workload) throw new AppError('not_found', 'no such workload');
  const { secret, hash } = ctx.auth.secrets.generate();
  const until = new Date(Date.now() + graceSeconds * 1000);
  await ctx.db.transaction(async (trx) => {
    await trx('workload_secrets').where({ workload_id: workloadId }).andWhere((q) => q.whereNull('valid_until').orWhere('valid_until', '>', until)).update({ valid_until: until });
    await trx('workload_secrets').insert({ id: randomUUID(), workload_id: workloadId, secret_hash: hash });
  });
  await ctx.auth.secrets.invalidate(workload.client_id);
  return { clientId: workload.client_id, clientSecret: secret, previousValidUntil: until.toISOString() };
}

/** Enables or disables a workload; disabling also ends its access tokens within a second, everywhere. */
export async function setWorkloadDisabled(ctx: AppContext, tenantId: string, workloadId: string, disabled: boolean): Promise<WorkloadView> {
  const updated = await ctx.db('workloads').where({ id: workloadId, tenant_id: tenantId }).update({ disabled }).returning('*');
  if (updated.length === 0) throw new AppError('not_found', 'no such workload');
  await ctx.auth.secrets.invalidate(updated[0].client_id);
  if (disabled) await ctx.auth.revokeSubjectTokens({ tenantId, sub: workloadId, revokedBy: null, reason: 'workload disabled', strict: true });
  return workloadView(updated[0]);
}

/** Creates a human user with an argon2id password hash. */
export async function createUser(ctx: AppContext, tenantId: string, input: { email: unknown; password: unknown; roleId: unknown }): Promise<{ id: string; tenantId: string; email: string; roleId: string; disabled: boolean; createdAt: string }> {
  // eslint-disable-next-line no-control-regex
  if (typeof input.email !== 'string' || !/^[^\s@\u0000-\u001f]+@[^\s@\u0000-\u001f]+$/.test(input.email) || input.email.length > 254) throw new AppError('validation_failed', 'email must be an e-mail address');
  if (typeof input.password !== 'string' || input.password.length < 12) throw new AppError('validation_failed', 'password must be at least 12 characters');
  const roleId = await requireRole(ctx, tenantId, input.roleId);
  const email = input.email.toLowerCase();
  if (await ctx.db('users').where({ tenant_id: tenantId, email }).first('id')) throw new AppError('conflict', 'a user with that e-mail exists in this tenant');
  const passwordHash = await ctx.pool.run<string>('hashPassword', { password: input.password });
  const row = { id: randomUUID(), tenant_id: tenantId, email, password_hash: passwordHash, role_id: roleId, created_at: new Date(), updated_at: new Date() };
  await ctx.db('users').insert(row);
  return { id: row.id, tenantId, email, roleId, disabled: false, createdAt: row.created_at.toISOString() };
}
