/** Cursor pagination over a unique column: `{items, nextCursor}`, for every list a service serves. */
import { problem } from '../errors/index.ts';
import { isUuid } from '../ids.ts';

/** What the caller asked for: a page size (already bounded) and the cursor it was handed, decoded. */
export interface PageRequest {
  limit: number;
  cursor: string | null;
}

/** One page of a list and the opaque cursor of the next, or null on the last page. */
export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

/** The part of a knex or objection query builder a page needs. */
interface Pageable<R> {
  where(column: string, op: string, value: string): unknown;
  orderBy(column: string, order: 'asc'): { limit(n: number): PromiseLike<R[]> };
}

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f]/;

/** Runs `query` one page at a time over `column` (a uuid `id` or a text key), mapping rows with `view`. */
export async function pageOf<R, T>(
  query: Pageable<R>,
  column: string,
  page: PageRequest,
  view: (row: R) => T,
): Promise<Page<T>> {
  const { limit, cursor } = page;
  const uuidColumn = column === 'id' || column.endsWith('.id');
  // The cursor reaches a uuid or text comparison: a malformed one is refused here, not by Postgres as a 500.
  if (
    cursor !== null &&
    ((uuidColumn && !isUuid(cursor)) || CONTROL.test(cursor) || cursor.length > 256)
  )
    throw problem('validation_failed', 'cursor is not one this endpoint issued');
  if (cursor) query.where(column, '>', cursor);
  const rows = await query.orderBy(column, 'asc').limit(limit + 1);
  const items = rows.slice(0, limit);
  const last = items[items.length - 1] as Record<string, unknown> | undefined;
  const key = column.includes('.') ? column.split('.').pop()! : column;
  return {
    items: items.map(view),
    nextCursor:
      rows.length > limit && last
        ? Buffer.from(String(last[key]), 'utf8').toString('base64url')
        : null,
  };
}
