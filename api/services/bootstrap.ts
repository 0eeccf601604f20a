/**
 * First start: with an empty database, create the platform tenant and an
 * administrator holding every permission. Credentials come from the environment, or are
 * generated and printed once. Never runs again once a tenant exists.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { AppContext } from '../context.ts';
import { PERMISSIONS } from '../../shared/permissions.ts';
import { Tenant } from '../../shared/db/models/tenants.ts';
import { Role, User } from '../../shared/db/models/identities.ts';
import { SYSTEM_ACTOR } from '../../shared/audit/actor.ts';

export interface BootstrapResult {
  tenantId: string;
  email: string;
  /** Only when it was generated: the caller prints it once. */
  generatedPassword?: string;
}

/** Creates the platform tenant and admin when no tenant exists; returns null otherwise. */
export async function bootstrapPlatform(ctx: AppContext): Promise<BootstrapResult | null> {
  const result = await createPlatformOnce(ctx);
  // Known from the start: a refusal of an unknown caller is audited in the platform tenant, even
  // while the database is away (the event waits in the audit buffer, its tenant must not).
  await ctx.auth.platformTenantId();
  return result;
}

/** The platform administrator's e-mail when KEYWARD_BOOTSTRAP_ADMIN_EMAIL is unset (the examples of the README and docs/ use it). */
export const DEFAULT_BOOTSTRAP_ADMIN_EMAIL = 'admin@keyward.local';

async function createPlatformOnce(ctx: AppContext): Promise<BootstrapResult | null> {
  const { config, db } = ctx;
  if (await Tenant.query(db).first()) return null;
  const tenantId = config.bootstrapTenantId ?? randomUUID();
  const email = (config.bootstrapAdminEmail ?? DEFAULT_BOOTSTRAP_ADMIN_EMAIL).toLowerCase();
  const generatedPassword = config.bootstrapAdminPassword
    ? undefined
    : randomBytes(18).toString('base64url');
  const t0 = performance.now();
  ctx.logger.info(
    { startup: 'bootstrap' },
    'first start: creating the platform tenant and its administrator',
  );
  const passwordHash = await ctx.pool.run<string>('hashPassword', {
    password: config.bootstrapAdminPassword ?? generatedPassword,
  });
  const roleId = randomUUID();
  await db.transaction(async (trx) => {
    await Tenant.query(trx).insert({ id: tenantId, name: 'platform', is_platform: true });
    await Role.query(trx).insert({
      id: roleId,
      tenant_id: tenantId,
      name: 'platform-admin',
      permissions: [...PERMISSIONS],
    });
    await User.query(trx).insert({
      id: randomUUID(),
      tenant_id: tenantId,
      email,
      password_hash: passwordHash,
      role_id: roleId,
    });
  });
  ctx.logger.info(
    { startup: 'bootstrap', ms: Math.round(performance.now() - t0) },
    'start-up: bootstrap done',
  );
  ctx.audit.record({
    tenantId,
    actor: SYSTEM_ACTOR,
    action: 'platform.bootstrap',
    outcome: 'success',
    target: email,
  });
  return { tenantId, email, generatedPassword };
}
