/**
 * One runtime operation, or each item of a batch (`{items: [...]}` → `{results: [...]}`, one
 * failure not failing the others), audited as tallied events. Transport-free: the Express
 * routes and the runtime lane both call it.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { AppContext } from '../../context.ts';
import { AppError, problemDocument, problem } from '../../../shared/errors/index.ts';
import { outcomeOf } from '../../../shared/metrics/index.ts';
import { type AccessClaims } from '../auth/access-tokens.ts';
import type { DecryptingCaller } from '../../../shared/keys/decryption-budget.ts';
import { subjectActor } from '../../../shared/audit/actor.ts';

/**
 * A runtime operation over one request body, in the token's tenant. Its body is of its schema
 * (bodies.ts), checked before the call: the method form lets an operation name that type.
 */
export type Operation = {
  run(ctx: AppContext, tenantId: string, body: object): Promise<Record<string, unknown>>;
}['run'];

/** The body checks of a route (compiled from its schema): one body or batch item, the batch. */
export interface BodyChecks {
  item: (value: unknown) => void;
  batch: (value: unknown) => void;
}

/**
 * The running operation: the key type it used, noted by the key lookup (runtime.ts operationKey) for the
 * metrics label, and who runs it, for the decryption-failure budget (unseal).
 */
interface OperationSlot {
  keyType: string;
  caller: DecryptingCaller;
}
const running = new AsyncLocalStorage<OperationSlot>();

/** Notes the type of the key the running operation uses (the first one, for re-encryption). */
export function noteKeyType(type: string): void {
  const slot = running.getStore();
  if (slot && slot.keyType === 'none') slot.keyType = type;
}

/**
 * Who runs the current runtime operation, as a decrypting caller: the route has checked its
 * permission already, so only its budget is left to check. Null outside runRuntime.
 */
export function runtimeCaller(): DecryptingCaller | null {
  return running.getStore()?.caller ?? null;
}

/**
 * Runs one operation on one body and records it: operation, key type and outcome with latency.
 * The key type is 'none' when the operation failed before it found a key (or uses none: random).
 */
async function measured(
  ctx: AppContext,
  caller: DecryptingCaller,
  action: string,
  op: Operation,
  tenantId: string,
  body: unknown,
  check: BodyChecks['item'] | undefined,
): Promise<Record<string, unknown>> {
  const slot: OperationSlot = { keyType: 'none', caller };
  const started = performance.now();
  let failure: unknown;
  try {
    return await running.run(slot, () => {
      check?.(body);
      return op(ctx, tenantId, body as object);
    });
  } catch (err) {
    failure = err ?? new Error('operation failed');
    throw err;
  } finally {
    const seconds = (performance.now() - started) / 1000;
    ctx.metrics.domain.cryptoOperation(action, slot.keyType, outcomeOf(failure), seconds);
  }
}

/**
 * Runs one operation, or each item of a batch, auditing each; returns the response body. A body
 * with an `items` array is a batch; `checks` refuse a body or item that does not fit the
 * operation's schema (as a failure of that operation or item).
 */
export async function runRuntime(
  ctx: AppContext,
  claims: AccessClaims,
  action: string,
  op: Operation,
  body: unknown,
  checks?: BodyChecks,
): Promise<unknown> {
  const input = (body ?? {}) as { kid?: unknown; items?: unknown };
  const tenantId = claims.tenantId;
  const actor = subjectActor(claims);
  const caller: DecryptingCaller = { tenantId, principal: actor, mayDecrypt: true };
  if (!Array.isArray(input.items)) {
    try {
      const result = await measured(ctx, caller, action, op, tenantId, body, checks?.item);
      ctx.audit.tally({
        tenantId,
        actor,
        action,
        outcome: 'success',
        target: String(result.kid ?? ''),
      });
      return result;
    } catch (err) {
      ctx.audit.tally({
        tenantId,
        actor,
        action,
        outcome: 'failure',
        target: typeof input.kid === 'string' ? input.kid.slice(0, 128) : null,
      });
      throw err;
    }
  }
  checks?.batch(input);
  const results = await Promise.all(
    input.items.map(async (item: unknown) => {
      try {
        const result = await measured(ctx, caller, action, op, tenantId, item, checks?.item);
        ctx.audit.tally({
          tenantId,
          actor,
          action,
          outcome: 'success',
          target: String(result.kid ?? ''),
        });
        return { status: 200, ...result };
      } catch (err) {
        const e =
          err instanceof AppError ? err : problem('internal', 'unexpected failure', { cause: err });
        if (!e.expose)
          ctx.logger.error({ err: (err as Error)?.message, action }, 'batch item failed');
        ctx.audit.tally({ tenantId, actor, action, outcome: 'failure', target: null });
        return { status: e.status, error: problemDocument(e, ctx.config.publicBaseUrl) };
      }
    }),
  );
  return { results };
}
