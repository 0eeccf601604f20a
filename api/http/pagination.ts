/** The page a list request asks for; the services page with shared/db/page.ts. */
import type { Request } from 'express';
import { problem } from '../../shared/errors/index.ts';
import type { PageRequest } from '../../shared/db/page.ts';

/** Reads `limit` (1..500, default 100) and `cursor` from the query. */
export function pageParams(req: Request): PageRequest {
  const raw = req.query.limit;
  const limit = raw === undefined ? 100 : Number(raw);
  if (!Number.isInteger(limit) || limit < 1 || limit > 500)
    throw problem('validation_failed', 'limit must be an integer from 1 to 500');
  const cursor =
    typeof req.query.cursor === 'string' && req.query.cursor !== ''
      ? Buffer.from(req.query.cursor, 'base64url').toString('utf8')
      : null;
  return { limit, cursor };
}
