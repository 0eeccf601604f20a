/**
 * Cryptographic exchanges of a tenant (`admin.cryptographicexchange.*`): offer a key to another
 * tenant, list and read the offers where this tenant is either side, accept, reject, cancel.
 * The workflow and its design are in api/services/exchanges.ts.
 */
import { Router } from 'express';
import type { AppContext } from '../../../../context.ts';
import { route } from '../../../../http/route.ts';
import { pageParams } from '../../../../http/pagination.ts';
import { param, tenantParam, uuidParam } from '../../../../http/params.ts';
import { actorOf, authorize } from '../../../../middleware/authenticate.ts';
import { jsonBody } from '../../../../middleware/body.ts';
import { onlyKnown } from '../../../../../shared/validation/members.ts';
import {
  acceptExchange,
  closeExchange,
  listExchanges,
  offerExchange,
  readExchange,
} from '../../../../services/exchanges.ts';

const OFFER_MEMBERS: ReadonlySet<string> = new Set([
  'kid',
  'toTenantId',
  'mode',
  'wrappingKid',
  'expiresInSeconds',
]);
const ACCEPT_MEMBERS: ReadonlySet<string> = new Set(['kid']);
const CLOSE_MEMBERS: ReadonlySet<string> = new Set(['reason']);

/** Mounted at /api/v3/admin/tenants/:tenantId/cryptographic-exchanges. */
export function createExchangesRouter(ctx: AppContext): Router {
  const router = uuidParam(Router({ mergeParams: true }), 'id', 'record');
  const json = jsonBody(ctx.config.jsonLimitBytes);
  const perm = (p: string) => authorize(ctx, `admin.cryptographicexchange.${p}`);

  route(router, '/', {
    get: [
      perm('read'),
      async (req, res) => {
        res.json(
          await listExchanges(
            ctx,
            tenantParam(req),
            { direction: req.query.direction, state: req.query.state },
            pageParams(req),
          ),
        );
      },
    ],
    post: [
      perm('create'),
      ...json,
      async (req, res) => {
        onlyKnown(req.body ?? {}, OFFER_MEMBERS);
        res
          .status(201)
          .json(await offerExchange(ctx, tenantParam(req), actorOf(req), req.body ?? {}));
      },
    ],
  });
  route(router, '/:id', {
    get: [
      perm('read'),
      async (req, res) => {
        res.json(await readExchange(ctx, tenantParam(req), param(req, 'id')));
      },
    ],
  });
  route(router, '/:id/accept', {
    post: [
      perm('accept'),
      ...json,
      async (req, res) => {
        onlyKnown(req.body ?? {}, ACCEPT_MEMBERS);
        res.json(
          await acceptExchange(
            ctx,
            tenantParam(req),
            param(req, 'id'),
            actorOf(req),
            req.body ?? {},
          ),
        );
      },
    ],
  });
  for (const action of ['reject', 'cancel'] as const) {
    route(router, `/:id/${action}`, {
      post: [
        perm(action),
        ...json,
        async (req, res) => {
          onlyKnown(req.body ?? {}, CLOSE_MEMBERS);
          res.json(
            await closeExchange(
              ctx,
              tenantParam(req),
              param(req, 'id'),
              actorOf(req),
              action,
              req.body ?? {},
            ),
          );
        },
      ],
    });
  }
  return router;
}
