/**
 * The Audit API: the tenant's events (time range, actor, action, outcome, cursor pagination)
 * and verification of the hash chain over a range, reporting the first broken link.
 */
import { Router } from 'express';
import type { AppContext } from '../context.ts';
import { AppError } from '../../shared/errors/index.ts';
import { GENESIS_HASH, chainHash } from '../../shared/audit/chain.ts';
import { route } from '../http/route.ts';
import { authorize } from '../middleware/authenticate.ts';
import { jsonBody } from '../middleware/body.ts';
import { jsonColumn } from '../../shared/db/knex.ts';

const eventView = (r: Record<string, unknown>) => ({
  seq: Number(r.seq), at: new Date(r.at as string).toISOString(), actor: r.actor, action: r.action, outcome: r.outcome, target: r.target,
  details: jsonColumn(r.details), hash: r.hash, prevHash: r.prev_hash,
});

function isoParam(v: unknown, name: string): Date | null {
  if (v === undefined) return null;
  const d = new Date(String(v));
  if (Number.isNaN(d.getTime())) throw new AppError('validation_failed', `${name} must be an ISO 8601 time`);
  return d;
}

/** Mounted at /api/v3/audit (after service-core authentication). */
export function createAuditRouter(ctx: AppContext): Router {
  const router = Router();
  route(router, '/events', {
    get: [authorize(ctx, 'audit.events.read'), async (req, res) => {
      await ctx.audit.flush();
      const limit = Math.min(Math.max(Number(req.query.limit ?? 100) || 100, 1), 1000);
      const q = ctx.db('audit_events').where({ tenant_id: req.auth.tenantId }).orderBy('seq', 'asc').limit(limit + 1);
      const from = isoParam(req.query.from, 'from');
      const to = isoParam(req.query.to, 'to');
      if (from) q.where('at', '>=', from);
      if (to) q.where('at', '<', to);
      for (const f of ['actor', 'action', 'outcome'] as const) {
        const v = req.query[f];
        if (v === undefined) continue;
        // eslint-disable-next-line no-control-regex
        if (typeof v !== 'string' || v.length > 1024 || /[\u0000-\u001f]/.test(v)) throw new AppError('validation_failed', `${f} must be a plain string`);
        q.where(f, v);
      }
      if (typeof req.query.cursor === 'string') {
        const after = Number(Buffer.from(req.query.cursor, 'base64url').toString());
        if (!Number.isSafeInteger(after) || after < 0) throw new AppError('validation_failed', 'cursor is not one this endpoint issued');
        q.where('seq', '>', after);
      }
      const rows = await q;
      const items = rows.slice(0, limit).map(eventView);
      res.json({ items, nextCursor: rows.length > limit ? Buffer.from(String(items[items.length - 1].seq)).toString('base64url') : null });
    }],
  });
  route(router, '/verify', {
    post: [authorize(ctx, 'audit.verify'), ...jsonBody(ctx.config.jsonLimitBytes), async (req, res) => {
      await ctx.audit.flush();
      const { fromSeq = 1, toSeq } = (req.body ?? {}) as { fromSeq?: number; toSeq?: number };
      if (!Number.isSafeInteger(fromSeq) || fromSeq < 1 || (toSeq !== undefined && !Number.isSafeInteger(toSeq))) throw new AppError('validation_failed', 'fromSeq and toSeq must be positive integers');
      const tenantId = req.auth.tenantId;
      let prev = fromSeq === 1 ? GENESIS_HASH : ((await ctx.db('audit_events').where({ tenant_id: tenantId, seq: fromSeq - 1 }).first('hash'))?.hash as string | undefined) ?? null;
      let expectedSeq = fromSeq;
      let checked = 0;
      // Stream the range in pages so a long chain is verified in constant memory.
      for (;;) {
        const q = ctx.db('audit_events').where({ tenant_id: tenantId }).where('seq', '>=', expectedSeq).orderBy('seq', 'asc').limit(1000);
        if (toSeq !== undefined) q.where('seq', '<=', toSeq);
        const rows = await q;
        if (rows.length === 0) break;
        for (const r of rows) {
          const seq = Number(r.seq);
          const details = jsonColumn<Record<string, unknown>>(r.details);
          const content = { tenantId, seq, at: new Date(r.at).toISOString(), actor: r.actor, action: r.action, outcome: r.outcome, target: r.target ?? null, details };
          const reason = seq !== expectedSeq ? `event ${expectedSeq} is missing`
            : prev !== null && r.prev_hash !== prev ? 'prevHash does not match the previous event'
              : chainHash(r.prev_hash, content) !== r.hash ? 'the event content does not match its hash' : null;
          if (reason) {
            res.json({ valid: false, checked, firstBroken: { seq: reason.startsWith('event') ? expectedSeq : seq, reason } });
            return;
          }
          prev = r.hash;
          expectedSeq = seq + 1;
          checked += 1;
        }
      }
      res.json({ valid: true, checked, fromSeq, toSeq: expectedSeq - 1 });
    }],
  });
  return router;
}
