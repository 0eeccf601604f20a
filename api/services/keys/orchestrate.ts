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
import { isKeyType } from '../../../shared/crypto/registry.ts';
import { KID, changeKey } from './store.ts';
import { KEY_STATES, type KeyAction } from '../../../shared/keys/lifecycle.ts';
import { keysQuery } from '../../../shared/keys/lookup.ts';
import { whereUsageEnabled } from '../../../shared/keys/usages.ts';
import { onlyKnown } from '../../../shared/validation/members.ts';

const INLINE_LIMIT = 50;
const MAX_KEYS = 10_000;
const OPERATIONS: readonly KeyAction[] = ['rotate', 'suspend', 'resume', 'revoke'];
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

/** The members a selector may have; anything else is a 400, never silently ignored. */
const SELECTOR_FILTERS = new Map<string, (v: unknown) => boolean>([
  ['type', isKeyType],
  ['usage', (v) => v === 'encrypt' || v === 'sign'],
  ['state', (v) => typeof v === 'string' && (KEY_STATES as readonly string[]).includes(v)],
  ['kidPrefix', (v) => typeof v === 'string' && KID.test(v)],
]);
const BODY_MEMBERS: ReadonlySet<string> = new Set([
  'operation',
  'kids',
  'selector',
  'dryRun',
  'expectedCount',
]);
const SELECTOR_MEMBERS: ReadonlySet<string> = new Set([...SELECTOR_FILTERS.keys(), 'all']);

const invalid = (msg: string) => problem('validation_failed', msg);
const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The kids a request names. A selector that filters on nothing would match every key of the
 * tenant, so it must say so with `all: true`; an unknown member (a typo such as `kid_prefix`),
 * a wrong type or an empty selector is refused rather than widening the match to everything.
 */
async function selectKids(
  ctx: AppContext,
  tenantId: string,
  body: Record<string, unknown>,
): Promise<string[]> {
  if ((body.kids === undefined) === (body.selector === undefined))
    throw invalid('give exactly one of kids and selector');
  if (body.kids !== undefined) {
    if (
      !Array.isArray(body.kids) ||
      body.kids.length === 0 ||
      body.kids.length > MAX_KEYS ||
      !body.kids.every((k) => typeof k === 'string' && KID.test(k))
    ) {
      throw invalid(
        `kids must be 1 to ${MAX_KEYS} kids (1 to 128 characters of A-Z a-z 0-9 . _ : -)`,
      );
    }
    return [...new Set(body.kids as string[])];
  }
  const sel = body.selector;
  if (!isObject(sel))
    throw invalid('selector must be an object {type?, usage?, state?, kidPrefix?} or {all: true}');
  const members = Object.keys(sel);
  onlyKnown(sel, SELECTOR_MEMBERS, 'selector member');
  if (Object.hasOwn(sel, 'all')) {
    if (sel.all !== true || members.length !== 1)
      throw invalid('all must be true and stand alone: it selects every key of the tenant');
  } else {
    if (members.length === 0)
      throw invalid(
        'an empty selector would match every key; give a filter, or all: true to select every key',
      );
    for (const m of members)
      if (!SELECTOR_FILTERS.get(m)!(sel[m])) throw invalid(`selector.${m} has an invalid value`);
  }
  const q = keysQuery(ctx.db, tenantId).limit(MAX_KEYS).orderBy('kid');
  for (const f of ['type', 'state'] as const)
    if (sel[f] !== undefined) q.where(f, sel[f] as string);
  // A key for both usages is selected by either (shared/keys/usages.ts).
  if (sel.usage !== undefined) whereUsageEnabled(q, sel.usage as string);
  if (typeof sel.kidPrefix === 'string')
    q.where('kid', 'like', `${sel.kidPrefix.replace(/[\\%_]/g, (c) => `\\${c}`)}%`);
  return (await q.select('kid')).map((r) => r.kid as string);
}

/** Checks the members of the request body around the selection. */
function checkBody(body: Record<string, unknown>): {
  action: KeyAction;
  dryRun: boolean;
  expectedCount?: number;
} {
  onlyKnown(body, BODY_MEMBERS);
  const action = body.operation as KeyAction;
  if (!OPERATIONS.includes(action))
    throw invalid(`operation must be one of ${OPERATIONS.join(', ')}`);
  if (body.dryRun !== undefined && typeof body.dryRun !== 'boolean')
    throw invalid('dryRun must be a boolean');
  const n = body.expectedCount;
  if (n !== undefined && !(Number.isInteger(n) && (n as number) >= 0 && (n as number) <= MAX_KEYS))
    throw invalid(`expectedCount must be an integer from 0 to ${MAX_KEYS}`);
  return { action, dryRun: body.dryRun === true, expectedCount: n as number | undefined };
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
  body: Record<string, unknown>,
): Promise<{ status: number; body: unknown }> {
  const { tenantId } = caller;
  if (!isObject(body)) throw invalid('the body must be a JSON object');
  const { action, dryRun, expectedCount } = checkBody(body);
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
