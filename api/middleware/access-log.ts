/**
 * The Express side of the access log (api/http/access-log.ts, which the runtime lane writes
 * too): one line when the response ends, with the matched route's template.
 */
import type { RequestHandler } from 'express';
import type { AccessClaims } from '../services/auth/access-tokens.ts';
import { routeTemplate } from '../http/route.ts';
import type { Metrics } from '../metrics.ts';
import { bytesMoved, logAccess, socketBytes, type AccessLog } from '../http/access-log.ts';

/** The Express side: one line when the response ends, completed or not. */
export function accessLog(access: AccessLog, metrics: Metrics): RequestHandler {
  return (req, res, next) => {
    const started = performance.now();
    const at = socketBytes(req);
    res.once('close', () => {
      logAccess(access, metrics, {
        method: req.method,
        route: routeTemplate(res),
        status: res.statusCode,
        reqId: req.id,
        claims: (req as { auth?: AccessClaims }).auth,
        started,
        ...bytesMoved(req, at),
        res,
      });
    });
    next();
  };
}
