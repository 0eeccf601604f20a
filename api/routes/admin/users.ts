/** Human users of a tenant (`admin.humanuser`: full CRUD); password hashes are never returned. */
import { Router, type RequestHandler } from 'express';
import type { AppContext } from '../../context.ts';
import { AppError } from '../../../shared/errors/index.ts';
import { route } from '../../http/route.ts';
import { paginate } from '../../http/pagination.ts';
import { auditChange, param, tenantParam } from '../../http/params.ts';
import { authorize } from '../../middleware/authenticate.ts';
import { jsonBody } from '../../middleware/body.ts';
import { createUser } from '../../services/identities.ts';
import { startPasswordReset } from '../../services/auth/password-reset.ts';
import { revokeSubjectRefreshTokens } from '../../services/auth/refresh-tokens.ts';
import { isUuid } from '../../../shared/ids.ts';
import { onlyKnown } from '../../../shared/validation/members.ts';

const NEW_USER_MEMBERS: ReadonlySet<string> = new Set(['email', 'password', 'roleId']);
const USER_CHANGE_MEMBERS: ReadonlySet<string> = new Set(['roleId', 'disabled']);

const userView = (r: Record<string, unknown>) => ({
  id: r.id, tenantId: r.tenant_id, email: r.email, roleId: r.role_id, disabled: Boolean(r.disabled),
  lockedUntil: r.locked_until ? new Date(r.locked_until as string).toISOString() : null,
  createdAt: new Date(r.created_at as string).toISOString(), updatedAt: new Date(r.updated_at as string).toISOString(),
});

/** Mounted at /api/v3/admin/tenants/:tenantId/users. */
export function createUsersRouter(ctx: AppContext): Router {
  const router = Router({ mergeParams: true });
  const json = jsonBody(ctx.config.jsonLimitBytes);
  const write = authorize(ctx, 'admin.humanuser');
  // Reading needs admin.humanuser or its read-only sibling.
  const read: RequestHandler = (req, res, next) => (req.auth.permissions.includes('admin.humanuser.read') ? next() : write(req, res, next));
  const find = async (tenantId: string, id: string) => {
    const row = await ctx.db('users').where({ id, tenant_id: tenantId }).first();
    if (!row) throw new AppError('not_found', 'no such user');
    return row;
  };
  route(router, '/', {
    get: [read, async (req, res) => {
      res.json(await paginate(ctx.db('users').where({ tenant_id: tenantParam(req) }), 'id', req, userView));
    }],
    post: [write, ...json, async (req, res) => {
      onlyKnown(req.body ?? {}, NEW_USER_MEMBERS);
      const user = await createUser(ctx, tenantParam(req), req.body ?? {});
      auditChange(ctx, req, 'user.create', user.id);
      res.status(201).json(user);
    }],
  });
  route(router, '/:id', {
    get: [read, async (req, res) => {
      res.json(userView(await find(tenantParam(req), param(req, 'id'))));
    }],
    patch: [write, ...json, async (req, res) => {
      onlyKnown(req.body ?? {}, USER_CHANGE_MEMBERS);
      const user = await find(tenantParam(req), param(req, 'id'));
      const { roleId, disabled } = req.body ?? {};
      const update: Record<string, unknown> = { updated_at: new Date() };
      if (roleId !== undefined) {
        if (typeof roleId !== 'string' || !isUuid(roleId) || !(await ctx.db('roles').where({ id: roleId, tenant_id: tenantParam(req) }).first('id'))) throw new AppError('validation_failed', 'roleId must name a role of this tenant');
        update.role_id = roleId;
      }
      if (disabled !== undefined) {
        if (typeof disabled !== 'boolean') throw new AppError('validation_failed', 'disabled must be a boolean');
        update.disabled = disabled;
      }
      const [row] = await ctx.db('users').where({ id: user.id }).update(update).returning('*');
      if (update.disabled === true) {
        await revokeSubjectRefreshTokens(ctx.db, user.id);
        await ctx.auth.revokeSubjectTokens({ tenantId: user.tenant_id, sub: user.id, revokedBy: `${req.auth.kind}:${req.auth.sub}`, reason: 'user disabled', strict: true });
      } else if (update.role_id !== undefined && update.role_id !== user.role_id) {
        // The user's tokens carry the old role's permissions: they end; the next sign-in carries the new role.
        await ctx.auth.revokeSubjectTokens({ tenantId: user.tenant_id, sub: user.id, revokedBy: `${req.auth.kind}:${req.auth.sub}`, reason: 'user role changed', strict: true });
      }
      auditChange(ctx, req, 'user.update', user.id, { roleId, disabled });
      res.json(userView(row));
    }],
    delete: [write, async (req, res) => {
      const user = await find(tenantParam(req), param(req, 'id'));
      await revokeSubjectRefreshTokens(ctx.db, user.id);
      await ctx.auth.revokeSubjectTokens({ tenantId: user.tenant_id, sub: user.id, revokedBy: `${req.auth.kind}:${req.auth.sub}`, reason: 'user deleted', strict: true });
      await ctx.db('users').where({ id: user.id }).delete();
      auditChange(ctx, req, 'user.delete', user.id);
      res.status(204).end();
    }],
  });
  route(router, '/:id/password-reset', {
    post: [(req, res, next) => (req.auth.permissions.includes('admin.humanuser.reset-password') ? next() : write(req, res, next)), async (req, res) => {
      const user = await find(tenantParam(req), param(req, 'id'));
      await startPasswordReset(ctx.db, ctx.auth.mailer, ctx.config.publicBaseUrl, user);
      auditChange(ctx, req, 'user.password-reset', user.id);
      res.status(202).json({ status: 'reset-mail-sent' });
    }],
  });
  return router;
}
