/**
 * The core of a runtime operation row (a row with `batch`: POST {kid, ...} or {items: [...]} →
 * JSON), run by the Express router and by the runtime lane (api/runtime-lane.ts) alike, so a path
 * answers the same on both stacks. The caller has verified the bearer; the core checks the row's
 * access, takes a point of the caller's budget for the row, reads the body with the one JSON
 * reader and runs the row's handler on the body, or on each item of a batch
 * (api/services/crypto/batch.ts: each item checked against the row's body schema on its own).
 */
import type { RequestHandler } from 'express';
import type { IncomingMessage } from 'node:http';
import Type, { type TSchema } from 'typebox';
import type { AppContext } from '../context.ts';
import type { AccessClaims } from '../services/auth/access-tokens.ts';
import { runRuntime, type BodyChecks, type Operation } from '../services/crypto/batch.ts';
import { BatchOf } from '../services/crypto/bodies.ts';
import { bodyChecker } from './input.ts';
import { attemptOf, type AccessAttempt } from '../access/checks.ts';
import { checkAccess, type Access } from '../access/rule.ts';
import { consumeApiBudget } from '../access/budget.ts';
import { declaredTooLarge, readCanonicalJson } from '../http/json-body.ts';
import { subjectActor } from '../../shared/audit/actor.ts';

/** What the core reads of an operation row (api/rows/endpoint.ts declares the row). */
export interface OperationRow {
  operationId: string;
  access: Access;
  /** The rate-limit endpoint, which is also the audit action of each call and item. */
  budget?: string;
  /** One item (a single request): the batch `{items}` is derived from it. */
  body?: TSchema;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  handle: (ctx: AppContext, input: any) => unknown;
}

/** The batch envelope `{items: [1 to 1000 values]}`; each item is then checked on its own. */
const checkBatch = bodyChecker(BatchOf(Type.Unknown()));
/** The compiled check of each item schema, shared by the rows that take it (v3, PQC, legacy). */
const compiled = new WeakMap<TSchema, BodyChecks>();

/** The body checks of an operation row, compiled on first sight (registration, at startup). */
export function operationChecks(row: OperationRow): BodyChecks {
  if (!row.body) throw new Error(`operation ${row.operationId} declares no body`);
  let checks = compiled.get(row.body);
  if (!checks) {
    checks = { item: bodyChecker(row.body), batch: checkBatch };
    compiled.set(row.body, checks);
  }
  return checks;
}

/** The operation core: access, budget, body, the handler per item; resolves to the response body. */
export async function serveOperation(
  ctx: AppContext,
  row: OperationRow,
  claims: AccessClaims,
  attempt: AccessAttempt,
  req: IncomingMessage,
): Promise<unknown> {
  checkAccess(ctx, row.access, claims, attempt);
  const action = row.budget ?? row.operationId;
  // A rate limit per client and per endpoint, the legacy endpoints included.
  await consumeApiBudget(ctx, claims, action);
  const actor = subjectActor(claims);
  // The row's handler sees one checked item, as any row's handler sees its checked body.
  const op: Operation = (ctx, _tenantId, body) =>
    row.handle(ctx, { params: {}, query: {}, body, claims, actor, req }) as ReturnType<Operation>;
  return runRuntime(
    ctx,
    claims,
    action,
    op,
    await readCanonicalJson(req, ctx.config.jsonLimitBytes),
    operationChecks(row),
  );
}

/** The Express handler of an operation row (mounted behind the area's bearer check). */
export function operationHandler(ctx: AppContext, row: OperationRow): RequestHandler {
  operationChecks(row);
  return async (req, res) => {
    // A body announced over the cap is refused before it is read: the client is asked to close.
    if (declaredTooLarge(req, ctx.config.jsonLimitBytes)) res.setHeader('Connection', 'close');
    res.json(await serveOperation(ctx, row, req.auth, attemptOf(req), req));
  };
}
