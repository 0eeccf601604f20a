/** Human users of a tenant (`admin.humanuser`: full CRUD); password hashes are never returned. */
import { Router, type RequestHandler } from 'express';
import type { AppContext } from '../../../../context.ts';
import { route } from '../../../../http/route.ts';
import { pageParams } from '../../../../http/pagination.ts';
import { auditChange, param, tenantParam, uuidParam } from '../../../../http/params.ts';
import { actorOf, authorize } from '../../../../middleware/authenticate.ts';
import { jsonBody } from '../../../../middleware/body.ts';
import {
  createUser,
  deleteUser,
  listUsers,
  readUser,
  resetUserPassword,
  updateUser,
} from '../../../../services/admin/users.ts';
import { onlyKnown } from '../../../../../shared/validation/members.ts';

const NEW_USER_MEMBERS: ReadonlySet<string> = new Set(['email', 'password', 'roleId']);
const USER_CHANGE_MEMBERS: ReadonlySet<string> = new Set(['roleId', 'disabled']);

/** Mounted at /api/v3/admin/tenants/:tenantId/users. */
export function createUsersRouter(ctx: AppContext): Router {
  const router = uuidParam(Router({ mergeParams: true }), 'id', 'record');
  const json = jsonBody(ctx.config.jsonLimitBytes);
  const write = authorize(ctx, 'admin.humanuser');
  // Reading needs admin.humanuser or its read-only sibling.
  const read: RequestHandler = (req, res, next) =>
    req.auth.permissions.includes('admin.humanuser.read') ? next() : write(req, res, next);
  route(router, '/', {
    get: [
      read,
      async (req, res) => {
        res.json(await listUsers(ctx.db, tenantParam(req), pageParams(req)));
      },
    ],
    post: [
      write,
      ...json,
      async (req, res) => {
        onlyKnown(req.body ?? {}, NEW_USER_MEMBERS);
        const user = await createUser(ctx, tenantParam(req), req.body ?? {});
        auditChange(ctx, req, 'user.create', user.id);
        res.status(201).json(user);
      },
    ],
  });
  route(router, '/:id', {
    get: [
      read,
      async (req, res) => {
        res.json(await readUser(ctx.db, tenantParam(req), param(req, 'id')));
      },
    ],
    patch: [
      write,
      ...json,
      async (req, res) => {
        onlyKnown(req.body ?? {}, USER_CHANGE_MEMBERS);
        const { roleId, disabled } = req.body ?? {};
        const user = await updateUser(
          ctx,
          tenantParam(req),
          param(req, 'id'),
          { roleId, disabled },
          actorOf(req),
        );
        auditChange(ctx, req, 'user.update', user.id, { roleId, disabled });
        res.json(user);
      },
    ],
    delete: [
      write,
      async (req, res) => {
        await deleteUser(ctx, tenantParam(req), param(req, 'id'), actorOf(req));
        auditChange(ctx, req, 'user.delete', param(req, 'id'));
        res.status(204).end();
      },
    ],
  });
  route(router, '/:id/password-reset', {
    post: [
      (req, res, next) =>
        req.auth.permissions.includes('admin.humanuser.reset-password')
          ? next()
          : write(req, res, next),
      async (req, res) => {
        const id = await resetUserPassword(ctx, tenantParam(req), param(req, 'id'));
        auditChange(ctx, req, 'user.password-reset', id);
        res.status(202).json({ status: 'reset-mail-sent' });
      },
    ],
  });
  return router;
}
