/**
 * Bulk key operations (`admin.keys.orchestrate`): rotate, suspend, resume or revoke many keys,
 * chosen by a kid list or a selector, with one result per key. Up to 50 keys answer inline;
 * larger batches run off the request path (202) and report progress at
 * GET .../keys/orchestrate/{operationId}. Operation records live in this process's memory.
 */
import { randomUUID } from 'node:crypto';
import type { Request } from 'express';
import type { AppContext } from '../../context.ts';
import { AppError } from '../../../shared/errors/index.ts';
import { tenantParam, auditChange } from '../../http/params.ts';
import { changeKey } from './store.ts';
import type { KeyAction } from './lifecycle.ts';

const INLINE_LIMIT = 50;
const MAX_KEYS = 10_000;
const OPERATIONS: readonly KeyAction[] = ['rotate', 'suspend', 'resume', 'revoke'];

interface KeyResult { kid: string; status: number; state?: string; version?: number; error?: { slug: string; detail: string } }
interface Operation { id: string; tenantId: string; operation: string; total: number; done: number; failed: number; state: 'running' | 'completed'; results: KeyResult[]; startedAt: string; finishedAt?: string }

const operations = new Map<string, Operation>();

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
  // Finished operations are kept an hour for their progress URL, then dropped.
  for (const [id, old] of operations) if (old.finishedAt && Date.parse(old.finishedAt) < Date.now() - 3_600_000) operations.delete(id);
  const op: Operation = { id: randomUUID(), tenantId, operation: action, total: kids.length, done: 0, failed: 0, state: 'running', results: [], startedAt: new Date().toISOString() };
  operations.set(op.id, op);
  void (async () => {
    for (const kid of kids) {
      const r = await runOne(ctx, req, tenantId, kid, action).catch((err) => ({ kid, status: 500, error: { slug: 'internal-error', detail: (err as Error).message } }));
      op.results.push(r);
      op.done += 1;
      if (r.status !== 200) op.failed += 1;
    }
    op.state = 'completed';
    op.finishedAt = new Date().toISOString();
    ctx.logger.info({ operationId: op.id, total: op.total, failed: op.failed }, 'bulk key operation finished');
  })();
  return { status: 202, body: { operationId: op.id, operation: action, total: op.total, state: op.state, progress: `/api/v3/admin/tenants/${tenantId}/keys/orchestrate/${op.id}` } };
}

/** Progress of a background bulk operation of the tenant. */
export function orchestration(tenantId: string, id: string): Operation {
  const op = operations.get(id);
  if (!op || op.tenantId !== tenantId) throw new AppError('not_found', 'no such operation');
  return op;
}
