/** Workloads of a tenant: register (secret shown once), list, read, disable/enable, rotate the secret, delete. */
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { AppContext } from '../../context.ts';
import { problem } from '../../../shared/errors/index.ts';
import { Workload, WorkloadSecret } from '../../../shared/db/models/identities.ts';
import { pageOf, type Page, type PageRequest } from '../../../shared/db/page.ts';
import { requireName } from './names.ts';
import { requireRole } from './roles.ts';
import type { NewWorkloadBody, WorkloadView } from '../../schemas/workloads.ts';

/** The longest grace a rotated secret may keep (30 days). */
const MAX_GRACE_SECONDS = 30 * 86400;

/** The API shape of a workload (never a secret). */
export const workloadView = (w: Workload): WorkloadView => ({
  id: w.id,
  tenantId: w.tenant_id,
  name: w.name,
  clientId: w.client_id,
  roleId: w.role_id,
  disabled: Boolean(w.disabled),
  createdAt: new Date(w.created_at).toISOString(),
});

/** Registers a workload once per name and tenant; the secret is returned only here. */
export async function registerWorkload(
  ctx: Pick<AppContext, 'db' | 'auth'>,
  tenantId: string,
  input: NewWorkloadBody,
): Promise<WorkloadView & { clientSecret: string }> {
  const name = requireName(input.name, 'a workload');
  const roleId = await requireRole(ctx.db, tenantId, input.roleId);
  if (await Workload.query(ctx.db).findOne({ tenant_id: tenantId, name }))
    throw problem('conflict', `workload ${name} is already registered in this tenant`);
  const { secret, hash } = ctx.auth.secrets.generate();
  const workload = await ctx.db.transaction(async (trx) => {
    const w = await Workload.query(trx).insert({
      id: randomUUID(),
      tenant_id: tenantId,
      name,
      client_id: randomUUID(),
      role_id: roleId,
      disabled: false,
      created_at: new Date(),
    });
    await WorkloadSecret.query(trx).insert({
      id: randomUUID(),
      workload_id: w.id,
      secret_hash: hash,
    });
    return w;
  });
  return { ...workloadView(workload), clientSecret: secret };
}

/** One page of a tenant's workloads. */
export const listWorkloads = (
  db: Knex,
  tenantId: string,
  page: PageRequest,
): Promise<Page<WorkloadView>> =>
  pageOf(Workload.query(db).where({ tenant_id: tenantId }), 'id', page, workloadView);

/** A workload of the tenant; 404 when there is none. */
export async function findWorkload(db: Knex, tenantId: string, id: string): Promise<Workload> {
  const workload = await Workload.query(db).findOne({ id, tenant_id: tenantId });
  if (!workload) throw problem('not_found', 'no such workload');
  return workload;
}

/** A workload as the API shows it. */
export const readWorkload = async (db: Knex, tenantId: string, id: string): Promise<WorkloadView> =>
  workloadView(await findWorkload(db, tenantId, id));

/** Issues a new secret; the old ones stay valid for the grace period (0 to 30 days), then are refused. */
export async function rotateWorkloadSecret(
  ctx: Pick<AppContext, 'db' | 'auth' | 'config'>,
  tenantId: string,
  workloadId: string,
  graceSeconds: number = ctx.config.secretGraceSeconds,
): Promise<{ clientId: string; clientSecret: string; previousValidUntil: string }> {
  // The row's schema says integer; the range is the service's (the default comes from config).
  if (!Number.isInteger(graceSeconds) || graceSeconds < 0 || graceSeconds > MAX_GRACE_SECONDS)
    throw problem(
      'validation_failed',
      `graceSeconds must be an integer from 0 to ${MAX_GRACE_SECONDS}`,
    );
  const workload = await findWorkload(ctx.db, tenantId, workloadId);
  const { secret, hash } = ctx.auth.secrets.generate();
  const until = new Date(Date.now() + graceSeconds * 1000);
  await ctx.db.transaction(async (trx) => {
    await WorkloadSecret.query(trx)
      .where({ workload_id: workloadId })
      .andWhere((q) => q.whereNull('valid_until').orWhere('valid_until', '>', until))
      .patch({ valid_until: until });
    await WorkloadSecret.query(trx).insert({
      id: randomUUID(),
      workload_id: workloadId,
      secret_hash: hash,
    });
  });
  await ctx.auth.secrets.invalidate(workload.client_id);
  return {
    clientId: workload.client_id,
    clientSecret: secret,
    previousValidUntil: until.toISOString(),
  };
}

/** Enables or disables a workload; disabling also ends its access tokens within a second, everywhere. */
export async function setWorkloadDisabled(
  ctx: AppContext,
  tenantId: string,
  workloadId: string,
  disabled: boolean,
  actor: string | null = null,
): Promise<WorkloadView> {
  const [workload] = await Workload.query(ctx.db)
    .where({ id: workloadId, tenant_id: tenantId })
    .patch({ disabled })
    .returning('*');
  if (!workload) throw problem('not_found', 'no such workload');
  await ctx.auth.secrets.invalidate(workload.client_id);
  if (disabled)
    await ctx.auth.revokeSubjectTokens({
      tenantId,
      sub: workloadId,
      revokedBy: actor,
      reason: 'workload disabled',
      strict: true,
    });
  return workloadView(workload);
}

/** Deletes a workload: its cached credentials go and its access tokens end everywhere. */
export async function deleteWorkload(
  ctx: AppContext,
  tenantId: string,
  id: string,
  actor: string,
): Promise<void> {
  const workload = await findWorkload(ctx.db, tenantId, id);
  await Workload.query(ctx.db).deleteById(workload.id);
  await ctx.auth.secrets.invalidate(workload.client_id);
  await ctx.auth.revokeSubjectTokens({
    tenantId: workload.tenant_id,
    sub: workload.id,
    revokedBy: actor,
    reason: 'workload deleted',
    strict: true,
  });
}
