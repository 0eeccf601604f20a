/**
 * Every route of the Admin API, as a table generated from the OpenAPI document (itself generated
 * from the route rows), never hand-kept: the isolation matrix drives each one with another
 * tenant's token. Paths are the document's, whose parameters carry the Express names in braces.
 */
import { apiDocument } from '../../../api/routes/index.ts';

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface AdminRoute {
  method: Method;
  path: string;
  /**
   * The documented JSON request example, with the members naming records as placeholders:
   * a body that would succeed for the owner, so a refusal proves the guard, not bad input.
   */
  body?: unknown;
}

interface Media {
  example?: unknown;
  schema?: { required?: string[] };
}
interface Operation {
  requestBody?: { content: Record<string, Media> };
}

const METHODS = new Set(['get', 'post', 'put', 'patch', 'delete']);

/**
 * Body members naming an existing record, and the placeholder the isolation test fills with the
 * victim's. Only required members count: an optional `kid` (creating a key, accepting an
 * exchange) is the name of the key the call makes, not a reference to one.
 */
const REFERENCES = new Map([
  ['roleId', '{roleId}'],
  ['kid', '{kid}'],
  ['toTenantId', '{otherTenantId}'],
]);

/** The documented JSON example of an operation, its required references as placeholders. */
function bodyOf(op: Operation): unknown {
  const media = op.requestBody?.content['application/json'];
  if (media?.example === undefined) return undefined;
  const required = new Set(media.schema?.required ?? []);
  return Object.fromEntries(
    Object.entries(media.example as Record<string, unknown>).map(([member, value]) => [
      member,
      required.has(member) ? (REFERENCES.get(member) ?? value) : value,
    ]),
  );
}

const paths = (
  apiDocument('http://localhost') as { paths: Record<string, Record<string, Operation>> }
).paths;

export const ADMIN_ROUTES: readonly AdminRoute[] = Object.entries(paths)
  .filter(([path]) => path.startsWith('/api/v3/admin/'))
  .flatMap(([path, ops]) =>
    Object.entries(ops)
      .filter(([m]) => METHODS.has(m))
      .map(([m, op]) => {
        const body = bodyOf(op);
        return { method: m.toUpperCase() as Method, path, ...(body === undefined ? {} : { body }) };
      }),
  );

/** The tenant-scoped area whose record an `{id}` names, from the path. */
export function idArea(path: string): 'tenant' | 'workload' | 'role' | 'user' | 'exchange' | null {
  if (!path.includes('{id}')) return null;
  if (path.includes('/platform/tenants/')) return 'tenant';
  if (path.includes('/workloads/')) return 'workload';
  if (path.includes('/roles/')) return 'role';
  if (path.includes('/users/')) return 'user';
  return 'exchange';
}
