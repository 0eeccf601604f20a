/** The page a list request asks for; the services page with shared/db/page.ts. */
import type { PageRequest } from '../../shared/db/page.ts';

/** The page of a checked query (a row's PageQuery: `limit` already an integer from 1 to 500). */
export function pageRequest(query: { limit?: number; cursor?: string }): PageRequest {
  const cursor =
    typeof query.cursor === 'string' && query.cursor !== ''
      ? Buffer.from(query.cursor, 'base64url').toString('utf8')
      : null;
  return { limit: query.limit ?? 100, cursor };
}
