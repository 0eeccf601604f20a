/**
 * Reading a tenant's audit events: the filter (time range, actor, action, outcome, cursor,
 * limit) read from a query its route has checked, and the page of events it selects.
 */
import type { Knex } from 'knex';
import { problem } from '../../shared/errors/index.ts';
import { AuditEvent } from '../../shared/db/models/audit.ts';
import type { EventView } from '../schemas/audit.ts';

/** What GET /api/v3/audit/events selects. */
export interface EventFilter {
  limit: number;
  /** ISO times for the database (a string, see timeParam). */
  from: string | null;
  to: string | null;
  /** The last seq of the previous page. */
  after: number | null;
  actor?: string;
  action?: string;
  outcome?: string;
}

const eventView = (e: AuditEvent): EventView => ({
  seq: Number(e.seq),
  at: new Date(e.at).toISOString(),
  actor: e.actor,
  action: e.action,
  outcome: e.outcome,
  target: e.target,
  details: e.details,
  hash: e.hash,
  prevHash: e.prev_hash,
});

const invalid = (message: string, field: string) =>
  problem('validation_failed', message, { details: { field } });

// RFC 3339 section 5.6 date-time (an offset is required: a time without one names no instant),
// or a full-date alone, read as midnight UTC. Four-digit years only: Postgres and the drivers
// disagree outside 0001..9999 (year 0, expanded years such as +275760).
const RFC3339 =
  /^(\d{4})-(\d{2})-(\d{2})(?:[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?([Zz]|([+-])(\d{2}):(\d{2})))?$/;
const MIN_TIME = Date.parse('0001-01-01T00:00:00Z');
const MAX_TIME = Date.parse('9999-12-31T23:59:59.999Z');

/** A time query value as an ISO string for the database, or null when absent; 400 for anything but one RFC 3339 time. */
function timeParam(query: EventQuery, name: 'from' | 'to'): string | null {
  const v = query[name];
  if (v === undefined) return null;
  const m = RFC3339.exec(v);
  if (!m)
    throw invalid(
      `${name} must be one RFC 3339 date-time (2026-01-31T12:00:00Z) or date (2026-01-31)`,
      name,
    );
  const [year, month, day, hour, minute, second, offsetHours, offsetMinutes] = [
    1, 2, 3, 4, 5, 6, 10, 11,
  ].map((i) => Number(m[i] ?? 0));
  const local = new Date(0);
  // setUTCFullYear, not Date.UTC: Date.UTC maps years 0..99 to 1900..1999.
  local.setUTCFullYear(year, month - 1, day);
  local.setUTCHours(hour, minute, second, Number((m[7] ?? '').padEnd(3, '0').slice(0, 3)));
  // A day the month does not have (2026-02-30, 9999-99-99) rolls over: the round trip tells.
  const exists =
    local.getUTCFullYear() === year &&
    local.getUTCMonth() === month - 1 &&
    local.getUTCDate() === day;
  if (!exists || hour > 23 || minute > 59 || second > 59 || offsetHours > 23 || offsetMinutes > 59)
    throw invalid(`${name} is not a valid date or time`, name);
  const t = local.getTime() - (m[9] === '-' ? -1 : 1) * (offsetHours * 60 + offsetMinutes) * 60_000;
  if (!(t >= MIN_TIME && t <= MAX_TIME))
    throw invalid(`${name} must lie in the years 0001 to 9999 (UTC)`, name);
  // A string, not a Date: the embedded driver writes years below 1000 without padding, which
  // Postgres then reads as two-digit years.
  return new Date(t).toISOString();
}

/** A plain-text filter: one string, without control characters. */
function textParam(v: string | undefined, name: string): string | undefined {
  // eslint-disable-next-line no-control-regex
  if (v !== undefined && /[\u0000-\u001f]/.test(v))
    throw invalid(`${name} must be one plain string`, name);
  return v;
}

/** The query of GET /api/v3/audit/events, its members and types checked by the route's schema. */
export interface EventQuery {
  from?: string;
  to?: string;
  actor?: string;
  action?: string;
  outcome?: string;
  cursor?: string;
  limit?: number;
}

/** Reads the event filter from a checked query: the times and the cursor; 400 naming the first unfit one. */
export function readEventFilter(query: EventQuery): EventFilter {
  const from = timeParam(query, 'from');
  const to = timeParam(query, 'to');
  const cursor = textParam(query.cursor, 'cursor');
  const after = cursor === undefined ? null : Number(Buffer.from(cursor, 'base64url').toString());
  if (after !== null && (!Number.isSafeInteger(after) || after < 0))
    throw invalid('cursor is not one this endpoint issued', 'cursor');
  return {
    limit: query.limit ?? 100,
    from,
    to,
    after,
    actor: textParam(query.actor, 'actor'),
    action: textParam(query.action, 'action'),
    outcome: textParam(query.outcome, 'outcome'),
  };
}

/** One page of a tenant's events in chain order, and the cursor of the next. */
export async function listEvents(
  db: Knex,
  tenantId: string,
  f: EventFilter,
): Promise<{ items: EventView[]; nextCursor: string | null }> {
  const q = AuditEvent.query(db)
    .where({ tenant_id: tenantId })
    .orderBy('seq', 'asc')
    .limit(f.limit + 1);
  if (f.from) q.where('at', '>=', f.from);
  if (f.to) q.where('at', '<', f.to);
  for (const field of ['actor', 'action', 'outcome'] as const)
    if (f[field] !== undefined) q.where(field, f[field]);
  if (f.after !== null) q.where('seq', '>', f.after);
  const rows = await q;
  const items = rows.slice(0, f.limit).map(eventView);
  return {
    items,
    nextCursor:
      rows.length > f.limit
        ? Buffer.from(String(items[items.length - 1].seq)).toString('base64url')
        : null,
  };
}
