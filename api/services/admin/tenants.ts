/**
 * Tenants (platform administration) and a tenant's own record. Services validate, write and
 * return the API shape (camelCase); callers audit with their actor.
 */
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { AppContext } from '../../context.ts';
import { problem } from '../../../shared/errors/index.ts';
import { Tenant } from '../../../shared/db/models/tenants.ts';
import { Workload } from '../../../shared/db/models/identities.ts';
import { pageOf, type Page, type PageRequest } from '../../../shared/db/page.ts';
import { requireName } from './names.ts';
import type { NewTenantBody, TenantView } from '../../schemas/common.ts';

/** The API shape of a tenant. */
export const tenantView = (t: Tenant): TenantView => ({
  id: t.id,
  name: t.name,
  status: t.status,
  isPlatform: Boolean(t.is_platform),
  createdAt: new Date(t.created_at).toISOString(),
});

/** Creates a tenant. */
export async function createTenant(
  ctx: Pick<AppContext, 'db'>,
  input: NewTenantBody,
): Promise<TenantView> {
  const tenant = await Tenant.query(ctx.db).insert({
    id: randomUUID(),
    name: requireName(input.name, 'a tenant'),
    status: 'active',
    is_platform: false,
    created_at: new Date(),
  });
  return tenantView(tenant);
}

/** One page of every tenant. */
export const listTenants = (db: Knex, page: PageRequest): Promise<Page<TenantView>> =>
  pageOf(Tenant.query(db), 'id', page, tenantView);

/** A tenant's record; 404 when there is none. */
export async function findTenant(db: Knex, id: string): Promise<Tenant> {
  const tenant = await Tenant.query(db).findById(id);
  if (!tenant) throw problem('not_found', 'no such tenant');
  return tenant;
}

/** A tenant as the API shows it; 404 when there is none. */
export const readTenant = async (db: Knex, id: string): Promise<TenantView> =>
  tenantView(await findTenant(db, id));

/**
 * Suspends or resumes a tenant (never the platform tenant). The change bites at once on every
 * instance: cached workload credentials are dropped and the suspended-tenant set is reloaded.
 */
export async function setTenantStatus(
  ctx: AppContext,
  id: string,
  status: 'active' | 'suspended',
): Promise<TenantView> {
  const [tenant] = await Tenant.query(ctx.db)
    .where({ id, is_platform: false })
    .patch({ status })
    .returning('*');
  if (!tenant)
    throw problem('not_found', 'no such tenant (the platform tenant cannot be suspended)');
  for (const w of await Workload.query(ctx.db).where({ tenant_id: id }).select('client_id'))
    await ctx.auth.secrets.invalidate(w.client_id);
  await ctx.auth.revocation.tenantChanged(id);
  return tenantView(tenant);
}
