/** The page a list request asks for; the services page with shared/db/page.ts. */
import type { Request } from 'express';
import { problem } from '../../shared/errors/index.ts';
import type { PageRequest } from '../../shared/db/page.ts';

/** The page of a checked query (a row's PageQuery: `limit` already an integer from 1 to 500). */
export function pageRequest(query: { limit?: number; cursor?: string }): PageRequest {
  const cursor =
    typeof query.cursor === 'string' && query.cursor !== ''
      ? Buffer.from(query.cursor, 'base64url').toString('utf8')
      : null;
  return { limit: query.limit ?? 100, cursor };
}

/** Reads `limit` (1..500, default 100) and `cursor` from the query of a route without a row. */
export function pageParams(req: Request): PageRequest {
  const raw = req.query.limit;
  const limit = raw === undefined ? 100 : Number(raw);
  if (!Number.isInteger(limit) || limit < 1 || limit > 500)
    throw problem('validation_failed', 'limit must be an integer from 1 to 500');
  const cursor = typeof req.query.cursor === 'string' ? req.query.cursor : undefined;
  return pageRequest({ limit, cursor });
}
