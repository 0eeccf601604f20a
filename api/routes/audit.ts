/**
 * The Audit API: the tenant's events (time range, actor, action, outcome, cursor pagination),
 * verification of the hash chain over a range (first broken link, or truncation against the
 * recorded head), and the head itself, for a tenant to anchor outside the service.
 */
import { Router, type Request } from 'express';
import type { AppContext } from '../context.ts';
import { onlyKnown } from '../../shared/validation/members.ts';
import { AppError } from '../../shared/errors/index.ts';
import { readHead, verifyChain } from '../../shared/audit/verify.ts';
import { route } from '../http/route.ts';
import { authorize } from '../middleware/authenticate.ts';
import { jsonBody } from '../middleware/body.ts';
import { jsonColumn } from '../../shared/db/knex.ts';

const eventView = (r: Record<string, unknown>) => ({
  seq: Number(r.seq), at: new Date(r.at as string).toISOString(), actor: r.actor, action: r.action, outcome: r.outcome, target: r.target,
  details: jsonColumn(r.details), hash: r.hash, prevHash: r.prev_hash,
});

const invalid = (message: string, field: string) => new AppError('validation_failed', message, { details: { field } });

const EVENTS_QUERY = new Set(['from', 'to', 'actor', 'action', 'outcome', 'cursor', 'limit']);
const VERIFY_BODY = new Set(['fromSeq', 'toSeq']);

// RFC 3339 section 5.6 date-time (an offset is required: a time without one names no instant),
// or a full-date alone, read as midnight UTC. Four-digit years only: Postgres and the drivers
// disagree outside 0001..9999 (year 0, expanded years such as +275760).
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})(?:[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?([Zz]|([+-])(\d{2}):(\d{2})))?$/;
const MIN_TIME = Date.parse('0001-01-01T00:00:00Z');
const MAX_TIME = Date.parse('9999-12-31T23:59:59.999Z');

/** A time query parameter as an ISO string for the database, or null when absent; 400 for anything but one RFC 3339 time. */
function timeParam(req: Request, name: string): string | null {
  const v = req.query[name];
  if (v === undefined) return null;
  const m = typeof v === 'string' ? RFC3339.exec(v) : null;
  if (!m) throw invalid(`${name} must be one RFC 3339 date-time (2026-01-31T12:00:00Z) or date (2026-01-31)`, name);
  const [year, month, day, hour, minute, second, offsetHours, offsetMinutes] = [1, 2, 3, 4, 5, 6, 10, 11].map((i) => Number(m[i] ?? 0));
  const local = new Date(0);
  // setUTCFullYear, not Date.UTC: Date.UTC maps years 0..99 to 1900..1999.
  local.setUTCFullYear(year, month - 1, day);
  local.setUTCHours(hour, minute, second, Number((m[7] ?? '').padEnd(3, '0').slice(0, 3)));
  // A day the month does not have (2026-02-30, 9999-99-99) rolls over: the round trip tells.
  const exists = local.getUTCFullYear() === year && local.getUTCMonth() === month - 1 && local.getUTCDate() === day;
  if (!exists || hour > 23 || minute > 59 || second > 59 || offsetHours > 23 || offsetMinutes > 59) throw invalid(`${name} is not a valid date or time`, name);
  const t = local.getTime() - (m[9] === '-' ? -1 : 1) * (offsetHours * 60 + offsetMinutes) * 60_000;
  if (!(t >= MIN_TIME && t <= MAX_TIME)) throw invalid(`${name} must lie in the years 0001 to 9999 (UTC)`, name);
  // A string, not a Date: the embedded driver writes years below 1000 without padding, which
  // Postgres then reads as two-digit years.
  return new Date(t).toISOString();
}

/** A plain-text filter: one string, without control characters. */
function textParam(req: Request, name: string): string | undefined {
  const v = req.query[name];
  if (v === undefined) return undefined;
  // eslint-disable-next-line no-control-regex
  if (typeof v !== 'string' || v.length > 1024 || /[\u0000-\u001f]/.test(v)) throw invalid(`${name} must be one plain string`, name);
  return v;
}

/** Mounted at /api/v3/audit (after service-core authentication). */
export function createAuditRouter(ctx: AppContext): Router {
  const router = Router();
  route(router, '/events', {
    get: [authorize(ctx, 'audit.events.read'), async (req, res) => {
      onlyKnown(req.query, EVENTS_QUERY, 'query parameter');
      const rawLimit = textParam(req, 'limit');
      const limit = rawLimit === undefined ? 100 : /^\d{1,4}$/.test(rawLimit) ? Number(rawLimit) : NaN;
      if (!(limit >= 1 && limit <= 1000)) throw invalid('limit must be an integer from 1 to 1000', 'limit');
      const from = timeParam(req, 'from');
      const to = timeParam(req, 'to');
      const cursor = textParam(req, 'cursor');
      const after = cursor === undefined ? null : Number(Buffer.from(cursor, 'base64url').toString());
      if (after !== null && (!Number.isSafeInteger(after) || after < 0)) throw invalid('cursor is not one this endpoint issued', 'cursor');
      const filters = (['actor', 'action', 'outcome'] as const).map((f) => [f, textParam(req, f)] as const);
      await ctx.audit.flush();
      const q = ctx.db('audit_events').where({ tenant_id: req.auth.tenantId }).orderBy('seq', 'asc').limit(limit + 1);
      if (from) q.where('at', '>=', from);
      if (to) q.where('at', '<', to);
      for (const [f, v] of filters) if (v !== undefined) q.where(f, v);
      if (after !== null) q.where('seq', '>', after);
      const rows = await q;
      const items = rows.slice(0, limit).map(eventView);
      res.json({ items, nextCursor: rows.length > limit ? Buffer.from(String(items[items.length - 1].seq)).toString('base64url') : null });
    }],
  });
  route(router, '/verify', {
    post: [authorize(ctx, 'audit.verify'), ...jsonBody(ctx.config.jsonLimitBytes), async (req, res) => {
      const body = (req.body ?? {}) as { fromSeq?: unknown; toSeq?: unknown };
      if (typeof body !== 'object' || Array.isArray(body)) throw invalid('the body must be a JSON object', 'body');
      onlyKnown(body, VERIFY_BODY, 'member');
      const { fromSeq = 1, toSeq } = body;
      if (!Number.isSafeInteger(fromSeq) || (fromSeq as number) < 1 || (toSeq !== undefined && !Number.isSafeInteger(toSeq))) throw invalid('fromSeq and toSeq must be positive integers', 'fromSeq');
      await ctx.audit.flush();
      res.json(await verifyChain(ctx.db, req.auth.tenantId, fromSeq as number, toSeq as number | undefined));
    }],
  });
  route(router, '/head', {
    // The same permission as verify: the head is what a verifier anchors elsewhere.
    get: [authorize(ctx, 'audit.verify'), async (req, res) => {
      await ctx.audit.flush();
      res.json(await readHead(ctx.db, req.auth.tenantId));
    }],
  });
  return router;
}
