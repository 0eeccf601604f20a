/**
 * Route registration that also answers 405 with an Allow header when the path exists but the
 * method does not (RFC 9110 15.5.6), instead of falling through to 404, and notes the matched
 * route's template on the response for the metrics and the access log.
 */
import type { ErrorRequestHandler, Request, RequestHandler, Response, Router } from 'express';
import { problem } from '../../shared/errors/index.ts';

type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';
export type Handlers = Partial<Record<Method, RequestHandler | RequestHandler[]>>;

/** The label of a request no route matched (unknown paths, refusals ahead of the routers). */
export const UNMATCHED = 'unmatched';

const TEMPLATE = Symbol('route template');

const UUID_SEGMENT = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The matched template (`/api/v3/admin/tenants/:tenantId/keys/:id`), never the concrete path.
 * Express gives the pattern of the last route only; req.baseUrl is the concrete mount path, so
 * its segments that hold a parameter's value are written back as `:name`, and any UUID left (a
 * parameter of a router without mergeParams) as `:id`. Read while the route runs: once an error
 * leaves the router, Express has already restored baseUrl to the parent's and the prefix is lost.
 */
function templateOf(req: Request): string {
  if (!req.route?.path) return UNMATCHED;
  const names = new Map<string, string>();
  for (const [name, value] of Object.entries(req.params ?? {}))
    if (typeof value === 'string') names.set(value, name);
  const base = req.baseUrl
    .split('/')
    .map((segment) => {
      const name = names.get(segment);
      if (name !== undefined && segment !== '') return `:${name}`;
      return UUID_SEGMENT.test(segment) ? ':id' : segment;
    })
    .join('/');
  const path = String(req.route.path);
  // A router's own root route ('/') names the mount path itself.
  return path === '/' && base !== '' ? base : `${base}${path}`;
}

/** The template of the route that took the response, or {@link UNMATCHED}. */
export function routeTemplate(res: Response): string {
  return (res as Response & { [TEMPLATE]?: string })[TEMPLATE] ?? UNMATCHED;
}

/** First handler of every route: notes its template while baseUrl still holds the full mount. */
const noteTemplate: RequestHandler = (req, res, next) => {
  (res as Response & { [TEMPLATE]?: string })[TEMPLATE] = templateOf(req);
  next();
};

/**
 * Registers the handlers of one path and a 405 for every other method; `onError`, when given,
 * sees the errors of this path first (to give them the shape the path answers in).
 */
export function route(
  router: Router,
  path: string,
  handlers: Handlers,
  onError?: ErrorRequestHandler,
): void {
  const r = router.route(path);
  r.all(noteTemplate);
  const allowed: string[] = [];
  for (const [method, handler] of Object.entries(handlers) as Array<
    [Method, RequestHandler | RequestHandler[]]
  >) {
    r[method](...(Array.isArray(handler) ? handler : [handler]));
    allowed.push(method.toUpperCase());
    if (method === 'get') allowed.push('HEAD');
  }
  const allow = allowed.join(', ');
  r.all((req, res, next) => {
    res.setHeader('Allow', allow);
    next(problem('method_not_allowed', `${req.method} is not allowed here; allowed: ${allow}`));
  });
  if (onError) r.all(onError);
}
