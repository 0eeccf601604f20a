/**
 * Bulk key operations (`admin.keys.orchestrate`): rotate, suspend, resume or revoke many keys,
 * chosen by a kid list or a selector, with one result per key. Up to 50 keys answer inline;
 * larger batches run off the request path (202) and report progress at
 * GET .../keys/orchestrate/{operationId}. That progress is a row of `key_operations`, so every
 * instance answers it; a row whose process stopped writing reads as `interrupted`.
 */
import { randomUUID } from 'node:crypto';
import type { Request } from 'express';
import type { AppContext } from '../../context.ts';
import { AppError } from '../../../shared/errors/index.ts';
import { jsonColumn } from '../../../shared/db/knex.ts';
import { isUuid } from '../../../shared/ids.ts';
import { actorOf } from '../../middleware/authenticate.ts';
import { tenantParam, auditChange } from '../../http/params.ts';
import { changeKey } from './store.ts';
import type { KeyAction } from './lifecycle.ts';

const INLINE_LIMIT = 50;
const MAX_KEYS = 10_000;
const OPERATIONS: readonly KeyAction[] = ['rotate', 'suspend', 'resume', 'revoke'];
/** Progress is written at most this often while an operation runs, and once at its end. */
const PROGRESS_EVERY_MS = 250;
/** A running operation whose row has not moved for this long lost its process. */
const STALE_AFTER_MS = 60_000;
/** Finished operations stay readable this long. */
const KEEP_MS = 24 * 3_600_000;

interface KeyResult { kid: string; status: number; state?: string; version?: number; error?: { slug: string; detail: string } }
type OperationState = 'running' | 'completed' | 'interrupted';
interface Operation { id: string; tenantId: string; operation: string; total: number; done: number; failed: number; state: OperationState; results: KeyResult[]; startedAt: string; finishedAt?: string }

async function selectKids(ctx: AppContext, tenantId: string, body: Record<string, unknown>): Promise<string[]> {
  if (Array.isArray(body.kids)) {
    if (!body.kids.every((k) => typeof k === 'string') || body.kids.length === 0 || body.kids.length > MAX_KEYS) throw new AppError('validation_failed', `kids must be 1 to ${MAX_KEYS} strings`);
    return [...new Set(body.kids as string[])];
  }
  const sel = body.selector as Record<string, unknown> | undefined;
  if (!sel || typeof sel !== 'object') throw new AppError('validation_failed', 'give kids or a selector {type?, usage?, state?, kidPrefix?}');
  const q = ctx.db('keys').where({ tenant_id: tenantId }).limit(MAX_KEYS).orderBy('kid');
  for (const f of ['type', 'usage', 'state'] as const) if (typeof sel[f] === 'string') q.where(f, sel[f] as string);
  if (typeof sel.kidPrefix === 'string') q.where('kid', 'like', `${sel.kidPrefix.replace(/[\\%_]/g, (c) => `\\${c}`)}%`);
  return (await q.select('kid')).map((r) => r.kid as string);
}

async function runOne(ctx: AppContext, req: Request, tenantId: string, kid: string, action: KeyAction): Promise<KeyResult> {
  try {
    const key = await changeKey(ctx, tenantId, kid, action);
    auditChange(ctx, req, `key.${action}`, kid, { bulk: true });
    return { kid, status: 200, state: key.state, version: key.currentVersion };
  } catch (err) {
    if (err instanceof AppError && err.expose) return { kid, status: err.status, error: { slug: err.slug, detail: err.message } };
    throw err;
  }
}

/** Runs or starts a bulk operation. */
export async function orchestrate(ctx: AppContext, req: Request, body: Record<string, unknown>): Promise<{ status: number; body: unknown }> {
  const tenantId = tenantParam(req);
  const action = body.operation as KeyAction;
  if (!OPERATIONS.includes(action)) throw new AppError('validation_failed', `operation must be one of ${OPERATIONS.join(', ')}`);
  const kids = await selectKids(ctx, tenantId, body);
  if (kids.length <= INLINE_LIMIT) {
    const results: KeyResult[] = [];
    for (const kid of kids) results.push(await runOne(ctx, req, tenantId, kid, action));
    return { status: 200, body: { operation: action, total: kids.length, succeeded: results.filter((r) => r.status === 200).length, results } };
  }
  await ctx.db('key_operations').where('finished_at', '<', new Date(Date.now() - KEEP_MS)).delete();
  const id = randomUUID();
  await ctx.db('key_operations').insert({ id, tenant_id: tenantId, operation: action, total: kids.length, started_by: actorOf(req) });
  void runInBackground(ctx, req, id, tenantId, kids, action);
  return { status: 202, body: { operationId: id, operation: action, total: kids.length, state: 'running', progress: `/api/v3/admin/tenants/${tenantId}/keys/orchestrate/${id}` } };
}

/** Changes the keys one by one, writing progress to the operation's row as it goes. */
async function runInBackground(ctx: AppContext, req: Request, id: string, tenantId: string, kids: string[], action: KeyAction): Promise<void> {
  const results: KeyResult[] = [];
  let failed = 0;
  let written = Date.now();
  const write = (extra: Record<string, unknown> = {}) =>
    ctx.db('key_operations').where({ id }).update({ done: results.length, failed, results: JSON.stringify(results), updated_at: new Date(), ...extra });
  try {
    for (const kid of kids) {
      const r = await runOne(ctx, req, tenantId, kid, action).catch((err): KeyResult => {
        ctx.logger.error({ err, operationId: id, kid }, 'bulk key operation: one key failed unexpectedly');
        return { kid, status: 500, error: { slug: 'internal-error', detail: 'unexpected failure' } };
      });
      results.push(r);
      if (r.status !== 200) failed += 1;
      if (Date.now() - written >= PROGRESS_EVERY_MS) {
        await write();
        written = Date.now();
      }
    }
    await write({ state: 'completed', finished_at: new Date() });
    ctx.logger.info({ operationId: id, operation: action, total: kids.length, failed }, 'bulk key operation finished');
  } catch (err) {
    // The database went away mid-run: the row stops moving and reads as interrupted.
    ctx.logger.error({ err, operationId: id, done: results.length, total: kids.length }, 'bulk key operation could not record its progress; it stops here and reads as interrupted');
  }
}

/** Progress of a background bulk operation of the tenant; another tenant's id is not found. */
export async function orchestration(ctx: AppContext, tenantId: string, id: string): Promise<Operation> {
  const row = isUuid(id) ? await ctx.db('key_operations').where({ id, tenant_id: tenantId }).first() : undefined;
  if (!row) throw new AppError('not_found', 'no such operation');
  const stale = row.state === 'running' && Date.now() - new Date(row.updated_at).getTime() > STALE_AFTER_MS;
  return {
    id: row.id,
    tenantId: row.tenant_id,
    operation: row.operation,
    total: row.total,
    done: row.done,
    failed: row.failed,
    state: stale ? 'interrupted' : row.state,
    results: jsonColumn<KeyResult[]>(row.results),
    startedAt: new Date(row.started_at).toISOString(),
    ...(row.finished_at ? { finishedAt: new Date(row.finished_at).toISOString() } : {}),
  };
}
