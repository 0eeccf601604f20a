/** Cursor pagination for list endpoints: `{items, nextCursor}` ordered by a unique column. */
import type { Knex } from 'knex';
import type { Request } from 'express';
import { AppError } from '../../shared/errors/index.ts';
import { isUuid } from '../../shared/ids.ts';

/** Reads `limit` (1..500, default 100) and `cursor` from the query. */
export function pageParams(req: Request): { limit: number; cursor: string | null } {
  const raw = req.query.limit;
  const limit = raw === undefined ? 100 : Number(raw);
  if (!Number.isInteger(limit) || limit < 1 || limit > 500) throw new AppError('validation_failed', 'limit must be an integer from 1 to 500');
  const cursor = typeof req.query.cursor === 'string' && req.query.cursor !== '' ? Buffer.from(req.query.cursor, 'base64url').toString('utf8') : null;
  return { limit, cursor };
}

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f]/;

/** Runs a query one page at a time over `column` (a uuid `id` or a text key), mapping rows with `view`. */
export async function paginate<T>(query: Knex.QueryBuilder, column: string, req: Request, view: (row: Record<string, unknown>) => T): Promise<{ items: T[]; nextCursor: string | null }> {
  const { limit, cursor } = pageParams(req);
  const uuidColumn = column === 'id' || column.endsWith('.id');
  if (cursor !== null && ((uuidColumn && !isUuid(cursor)) || CONTROL.test(cursor) || cursor.length > 256)) throw new AppError('validation_failed', 'cursor is not one this endpoint issued');
  if (cursor) query.where(column, '>', cursor);
  const rows: Array<Record<string, unknown>> = await query.orderBy(column, 'asc').limit(limit + 1);
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  const key = column.includes('.') ? column.split('.').pop()! : column;
  return { items: page.map(view), nextCursor: rows.length > limit && last ? Buffer.from(String(last[key]), 'utf8').toString('base64url') : null };
}
