/**
 * Bulk key operations (`admin.keys.orchestrate`): rotate, suspend, resume or revoke many keys,
 * chosen by a kid list or a selector, with one result per key. Up to 50 keys answer inline;
 * larger batches run off the request path (202) and report progress at
 * GET .../keys/orchestrate/{operationId}. That progress is a row of `key_operations`, so every
 * instance answers it; a row whose process stopped writing reads as `interrupted`.
 */
import { randomUUID } from 'node:crypto';
import type { AppContext } from '../../context.ts';
import {
  AppError,
  problemDocument,
  type ProblemDocument,
  problem,
} from '../../../shared/errors/index.ts';
import { KeyOperation } from '../../../shared/db/models/keys.ts';
import { isUuid } from '../../../shared/ids.ts';
import { changeKey } from './store.ts';
import type { KeyAction } from '../../../shared/keys/lifecycle.ts';
import { keysQuery } from '../../../shared/keys/lookup.ts';
import { whereUsageEnabled } from '../../../shared/keys/usages.ts';

const INLINE_LIMIT = 50;
const MAX_KEYS = 10_000;
/** Progress is written at most this often while an operation runs, and once at its end. */
const PROGRESS_EVERY_MS = 250;
/** A running operation whose row has not moved for this long lost its process. */
const STALE_AFTER_MS = 60_000;
/** Finished operations stay readable this long. */
const KEEP_MS = 24 * 3_600_000;

/** Who asks, for which tenant: the plain values of the request that the use case needs. */
export interface OrchestrationCaller {
  tenantId: string;
  actor: string;
}

interface KeyResult {
  kid: string;
  status: number;
  state?: string;
  version?: number;
  error?: ProblemDocument;
}
type OperationState = 'running' | 'completed' | 'interrupted';
interface Operation {
  id: string;
  tenantId: string;
  operation: string;
  total: number;
  done: number;
  failed: number;
  state: OperationState;
  results: KeyResult[];
  startedAt: string;
  finishedAt?: string;
}

/** A bulk request, its types and bounds checked by the route's schema (kids and kidPrefix by the kid rule). */
export interface OrchestrationRequest {
  operation: Exclude<KeyAction, 'archive'>;
  kids?: string[];
  selector?: Selector;
  dryRun?: boolean;
  expectedCount?: number;
}
interface Selector {
  type?: string;
  usage?: string;
  state?: string;
  kidPrefix?: string;
  all?: true;
}

const invalid = (msg: string) => problem('validation_failed', msg);

/**
 * The kids a request names. A selector that filters on nothing would match every key of the
 * tenant, so it must say so with `all: true` alone; an unknown member (a typo such as
 * `kid_prefix`), a wrong type or an empty selector is refused by the route's schema rather than
 * widening the match to everything.
 */
async function selectKids(
  ctx: AppContext,
  tenantId: string,
  body: OrchestrationRequest,
): Promise<string[]> {
  if ((body.kids === undefined) === (body.selector === undefined))
    throw invalid('give exactly one of kids and selector');
  if (body.kids !== undefined) return [...new Set(body.kids)];
  const sel = body.selector as Selector;
  if (sel.all !== undefined && Object.keys(sel).length !== 1)
    throw invalid('all must be true and stand alone: it selects every key of the tenant');
  const q = keysQuery(ctx.db, tenantId).limit(MAX_KEYS).orderBy('kid');
  for (const f of ['type', 'state'] as const) if (sel[f] !== undefined) q.where(f, sel[f]);
  // A key for both usages is selected by either (shared/keys/usages.ts).
  if (sel.usage !== undefined) whereUsageEnabled(q, sel.usage);
  if (typeof sel.kidPrefix === 'string')
    q.where('kid', 'like', `${sel.kidPrefix.replace(/[\\%_]/g, (c) => `\\${c}`)}%`);
  return (await q.select('kid')).map((r) => r.kid as string);
}

async function runOne(
  ctx: AppContext,
  caller: OrchestrationCaller,
  kid: string,
  action: KeyAction,
): Promise<KeyResult> {
  try {
    const key = await changeKey(ctx, caller.tenantId, kid, action, caller.actor);
    ctx.audit.record({
      tenantId: caller.tenantId,
      actor: caller.actor,
      action: `key.${action}`,
      outcome: 'success',
      target: kid,
      details: { bulk: true },
    });
    return { kid, status: 200, state: key.state, version: key.currentVersion };
  } catch (err) {
    if (err instanceof AppError && err.expose)
      return { kid, status: err.status, error: problemDocument(err, ctx.config.publicBaseUrl) };
    throw err;
  }
}

/** Runs or starts a bulk operation. */
export async function orchestrate(
  ctx: AppContext,
  caller: OrchestrationCaller,
  body: OrchestrationRequest,
): Promise<{ status: 200 | 202; body: unknown }> {
  const { tenantId } = caller;
  const { operation: action, dryRun, expectedCount } = body;
  const kids = await selectKids(ctx, tenantId, body);
  if (expectedCount !== undefined && kids.length !== expectedCount) {
    throw problem(
      'conflict',
      `the request matches ${kids.length} keys, not the expected ${expectedCount}; nothing was changed`,
      { details: { expectedCount, matched: kids.length } },
    );
  }
  // Nothing changes on a dry run: the caller sees what the same request would touch.
  if (dryRun)
    return { status: 200, body: { operation: action, dryRun: true, total: kids.length, kids } };
  if (kids.length <= INLINE_LIMIT) {
    const results: KeyResult[] = [];
    for (const kid of kids) results.push(await runOne(ctx, caller, kid, action));
    return {
      status: 200,
      body: {
        operation: action,
        total: kids.length,
        succeeded: results.filter((r) => r.status === 200).length,
        results,
      },
    };
  }
  await ctx
    .db('key_operations')
    .where('finished_at', '<', new Date(Date.now() - KEEP_MS))
    .delete();
  const id = randomUUID();
  await ctx.db('key_operations').insert({
    id,
    tenant_id: tenantId,
    operation: action,
    total: kids.length,
    started_by: caller.actor,
  });
  void runInBackground(ctx, caller, id, kids, action);
  return {
    status: 202,
    body: {
      operationId: id,
      operation: action,
      total: kids.length,
      state: 'running',
      progress: `/api/v3/admin/tenants/${tenantId}/keys/orchestrate/${id}`,
    },
  };
}

/** Changes the keys one by one, writing progress to the operation's row as it goes. */
async function runInBackground(
  ctx: AppContext,
  caller: OrchestrationCaller,
  id: string,
  kids: string[],
  action: KeyAction,
): Promise<void> {
  const results: KeyResult[] = [];
  let failed = 0;
  let written = Date.now();
  const write = (extra: Record<string, unknown> = {}) =>
    ctx
      .db('key_operations')
      .where({ id })
      .update({
        done: results.length,
        failed,
        results: JSON.stringify(results),
        updated_at: new Date(),
        ...extra,
      });
  try {
    for (const kid of kids) {
      const r = await runOne(ctx, caller, kid, action).catch((err): KeyResult => {
        ctx.logger.error(
          { err, operationId: id, kid },
          'bulk key operation: one key failed unexpectedly',
        );
        return {
          kid,
          status: 500,
          error: problemDocument(
            problem('internal', 'unexpected failure'),
            ctx.config.publicBaseUrl,
          ),
        };
      });
      results.push(r);
      if (r.status !== 200) failed += 1;
      if (Date.now() - written >= PROGRESS_EVERY_MS) {
        await write();
        written = Date.now();
      }
    }
    await write({ state: 'completed', finished_at: new Date() });
    ctx.logger.info(
      { operationId: id, operation: action, total: kids.length, failed },
      'bulk key operation finished',
    );
  } catch (err) {
    // The database went away mid-run: the row stops moving and reads as interrupted.
    ctx.logger.error(
      { err, operationId: id, done: results.length, total: kids.length },
      'bulk key operation could not record its progress; it stops here and reads as interrupted',
    );
  }
}

/** Progress of a background bulk operation of the tenant; another tenant's id is not found. */
export async function orchestration(
  ctx: AppContext,
  tenantId: string,
  id: string,
): Promise<Operation> {
  const row = isUuid(id)
    ? await KeyOperation.query(ctx.db).findOne({ id, tenant_id: tenantId })
    : undefined;
  if (!row) throw problem('not_found', 'no such operation');
  const stale =
    row.state === 'running' && Date.now() - new Date(row.updated_at).getTime() > STALE_AFTER_MS;
  return {
    id: row.id,
    tenantId: row.tenant_id,
    operation: row.operation,
    total: row.total,
    done: row.done,
    failed: row.failed,
    state: stale ? 'interrupted' : (row.state as OperationState),
    results: row.results as KeyResult[],
    startedAt: new Date(row.started_at).toISOString(),
    ...(row.finished_at ? { finishedAt: new Date(row.finished_at).toISOString() } : {}),
  };
}
