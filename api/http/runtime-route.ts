/**
 * The runtime operation routes (POST {kid, ...} or {items: [...]} → JSON): one per-route core,
 * run by the Express router and by the runtime lane (api/runtime-lane.ts) alike, so a path
 * answers the same on both stacks, and by the legacy /api/crypto routes. The caller has verified
 * the bearer; the core checks the permissions (or the legacy role), takes a point of the caller's
 * budget for the endpoint, reads the body and runs the operation.
 */
import type { Router } from 'express';
import type { IncomingMessage } from 'node:http';
import Type, { type TObject } from 'typebox';
import type { AppContext } from '../context.ts';
import type { AccessClaims } from '../services/auth/access-tokens.ts';
import { runRuntime, type BodyChecks, type Operation } from '../services/crypto/batch.ts';
import { BatchOf } from '../services/crypto/bodies.ts';
import { bodyChecker } from './input.ts';
import { attemptOf, requirePermissions, type AccessAttempt } from '../access/checks.ts';
import { requireLegacyRole } from '../access/legacy-role.ts';
import { consumeApiBudget } from '../access/budget.ts';
import { declaredTooLarge, readCanonicalJson } from './json-body.ts';
import { route } from './route.ts';
import type { OperationDoc } from './runtime-contract.ts';

/** One runtime operation at a path below its mount. */
export interface RuntimeRoute {
  /** Below the mount, e.g. '/encrypt'. */
  path: string;
  /** Every one of these is required. */
  permissions: readonly string[];
  /** The audit action and the rate-limit endpoint. */
  action: string;
  /** Its request body (api/services/crypto/bodies.ts): checked before `op` runs, and documented. */
  body: TObject;
  op: Operation;
  /** Its answer, examples and problems (the OpenAPI operation is generated from it). */
  doc?: OperationDoc;
}

/**
 * A public form endpoint of the Auth API the lane also serves (POST /api/v3/auth/token): no
 * bearer, its core resolves to the JSON answer or throws what the OAuth error shape renders.
 */
export interface OAuthRoute {
  /** Below the mount, e.g. '/token'. */
  path: string;
  serve: (ctx: AppContext, req: IncomingMessage) => Promise<unknown>;
}

/** A legacy operation: a legacy role name in place of the permissions. */
export interface LegacyRuntimeRoute extends Omit<RuntimeRoute, 'permissions'> {
  /** Checked against the token's scopes; 401 without it. */
  legacyRole: string;
}

/** The batch envelope `{items: [1 to 1000 values]}`; each item is then checked on its own. */
const checkBatch = bodyChecker(BatchOf(Type.Unknown()));
/** The compiled check of each body schema, shared by the routes that take it (v3, PQC, legacy). */
const compiled = new WeakMap<TObject, BodyChecks>();

/** The body checks of a route, compiled on first sight (registration, at startup). */
export function bodyChecks(r: RuntimeRoute | LegacyRuntimeRoute): BodyChecks {
  let checks = compiled.get(r.body);
  if (!checks) {
    checks = { item: bodyChecker(r.body), batch: checkBatch };
    compiled.set(r.body, checks);
  }
  return checks;
}

/** The per-route core: permissions, budget, body, operation; resolves to the response body. */
export async function serveRuntime(
  ctx: AppContext,
  r: RuntimeRoute | LegacyRuntimeRoute,
  claims: AccessClaims,
  attempt: AccessAttempt,
  req: IncomingMessage,
): Promise<unknown> {
  if ('legacyRole' in r) requireLegacyRole(ctx, claims, r.legacyRole, attempt);
  else requirePermissions(ctx, claims, r.permissions, attempt);
  // Spec 8: a rate limit per client and per endpoint, the legacy endpoints included (they had
  // none before the two handlers became one).
  await consumeApiBudget(ctx, claims, r.action);
  return runRuntime(
    ctx,
    claims,
    r.action,
    r.op,
    await readCanonicalJson(req, ctx.config.jsonLimitBytes),
    bodyChecks(r),
  );
}

/** Registers the routes on `router` (which sits behind the area's bearer check). */
export function addRuntimeRoutes(
  ctx: AppContext,
  router: Router,
  routes: readonly (RuntimeRoute | LegacyRuntimeRoute)[],
): Router {
  for (const r of routes) {
    bodyChecks(r);
    route(router, r.path, {
      post: async (req, res) => {
        // A body announced over the cap is refused before it is read: the client is asked to close.
        if (declaredTooLarge(req, ctx.config.jsonLimitBytes)) res.setHeader('Connection', 'close');
        res.json(await serveRuntime(ctx, r, req.auth, attemptOf(req), req));
      },
    });
  }
  return router;
}
