/** Roles of a tenant: a name and a permission list from the catalogue. */
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { AppContext } from '../../context.ts';
import { problem } from '../../../shared/errors/index.ts';
import { isPermission, isPlatformPermission } from '../../../shared/permissions.ts';
import { isUuid } from '../../../shared/ids.ts';
import { Role, User, Workload } from '../../../shared/db/models/identities.ts';
import { pageOf, type Page, type PageRequest } from '../../../shared/db/page.ts';
import { findTenant } from './tenants.ts';
import { requireName } from './names.ts';
import type { NewRoleBody, RoleChangeBody, RoleView } from '../../schemas/roles.ts';

/** The API shape of a role. */
export const roleView = (r: Role): RoleView => ({
  id: r.id,
  tenantId: r.tenant_id,
  name: r.name,
  permissions: r.permissions,
  createdAt: new Date(r.created_at).toISOString(),
});

/**
 * The one permission rule, for creation and change alike: catalogue strings (the unknown ones
 * named), each once; only the platform tenant's roles may hold admin.platform.* permissions.
 */
async function readPermissions(
  db: Knex,
  tenantId: string,
  value: readonly string[],
): Promise<string[]> {
  const permissions = [...new Set(value)];
  const unknown = permissions.filter((p) => !isPermission(p));
  if (unknown.length)
    throw problem('validation_failed', `unknown permissions: ${unknown.join(', ')}`, {
      details: { unknownPermissions: unknown },
    });
  const tenant = await findTenant(db, tenantId);
  if (!tenant.is_platform && permissions.some(isPlatformPermission))
    throw problem('validation_failed', 'a tenant role cannot hold admin.platform.* permissions');
  return permissions;
}

/** 409 when another role of the tenant has the name (the unique index would answer a 500). */
async function requireFreeName(
  db: Knex,
  tenantId: string,
  name: string,
  except?: string,
): Promise<void> {
  const q = Role.query(db).where({ tenant_id: tenantId, name });
  if (except) q.whereNot({ id: except });
  if (await q.first()) throw problem('conflict', `a role named ${name} exists`);
}

/** Creates a role whose permissions come from the catalogue. */
export async function createRole(
  ctx: Pick<AppContext, 'db'>,
  tenantId: string,
  input: NewRoleBody,
): Promise<RoleView> {
  const name = requireName(input.name, 'a role');
  const permissions = await readPermissions(ctx.db, tenantId, input.permissions);
  await requireFreeName(ctx.db, tenantId, name);
  const role = await Role.query(ctx.db).insert({
    id: randomUUID(),
    tenant_id: tenantId,
    name,
    permissions,
    created_at: new Date(),
  });
  return roleView(role);
}

/** One page of a tenant's roles. */
export const listRoles = (db: Knex, tenantId: string, page: PageRequest): Promise<Page<RoleView>> =>
  pageOf(Role.query(db).where({ tenant_id: tenantId }), 'id', page, roleView);

/** A role of the tenant; 404 when there is none. */
export async function findRole(db: Knex, tenantId: string, id: string): Promise<Role> {
  const role = await Role.query(db).findOne({ id, tenant_id: tenantId });
  if (!role) throw problem('not_found', 'no such role');
  return role;
}

/** The role id when `roleId` names a role of the tenant; 400 otherwise. */
export async function requireRole(db: Knex, tenantId: string, roleId: string): Promise<string> {
  if (!isUuid(roleId) || !(await Role.query(db).findOne({ id: roleId, tenant_id: tenantId }))) {
    throw problem('validation_failed', 'roleId must name a role of this tenant');
  }
  return roleId;
}

/**
 * Renames a role or replaces its permissions. Narrowed permissions end the outstanding tokens of
 * its holders on every instance (they carry the removed ones); otherwise the briefly cached
 * workload credentials of the role are dropped so the change shows at once.
 */
export async function updateRole(
  ctx: AppContext,
  tenantId: string,
  id: string,
  input: RoleChangeBody,
  actor: string,
): Promise<RoleView> {
  const role = await findRole(ctx.db, tenantId, id);
  const patch: Partial<Pick<Role, 'name' | 'permissions'>> = {};
  if (input.name !== undefined) {
    patch.name = requireName(input.name, 'a role');
    await requireFreeName(ctx.db, tenantId, patch.name, role.id);
  }
  if (input.permissions !== undefined)
    patch.permissions = await readPermissions(ctx.db, tenantId, input.permissions);
  const [row] = Object.keys(patch).length
    ? await Role.query(ctx.db).where({ id: role.id }).patch(patch).returning('*')
    : [role];
  const kept = patch.permissions;
  if (kept && role.permissions.some((p) => !kept.includes(p))) {
    await ctx.auth.revokeRoleTokens(role.tenant_id, role.id, actor);
  } else {
    for (const w of await Workload.query(ctx.db).where({ role_id: role.id }).select('client_id'))
      await ctx.auth.secrets.invalidate(w.client_id);
  }
  return roleView(row);
}

/** Deletes a role no workload or user holds; 409 while one does. */
export async function deleteRole(db: Knex, tenantId: string, id: string): Promise<void> {
  const role = await findRole(db, tenantId, id);
  const used =
    (await Workload.query(db).findOne({ role_id: role.id })) ??
    (await User.query(db).findOne({ role_id: role.id }));
  if (used)
    throw problem('conflict', 'the role is assigned to workloads or users; reassign them first');
  await Role.query(db).deleteById(role.id);
}
