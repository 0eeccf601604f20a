/**
 * Route registration that also answers 405 with an Allow header when the path exists but the
 * method does not (RFC 9110 15.5.6), instead of falling through to 404.
 */
import type { RequestHandler, Router } from 'express';
import { problem } from '../../shared/errors/index.ts';

type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';
export type Handlers = Partial<Record<Method, RequestHandler | RequestHandler[]>>;

/** Registers the handlers of one path and a 405 for every other method. */
export function route(router: Router, path: string, handlers: Handlers): void {
  const r = router.route(path);
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
}
