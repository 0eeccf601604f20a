/**
 * Gives every request an id (X-Request-Id, echoed back) and a child logger carrying it. The
 * child logger is created on first use: most successful requests never log, and a pino child
 * per request was the largest single per-request cost measured on the hot path.
 */
import { randomUUID } from 'node:crypto';
import type { Express, RequestHandler } from 'express';
import type { Logger } from '../../shared/logger.ts';
import { isSafeId } from '../../shared/ids.ts';

declare module 'express-serve-static-core' {
  interface Request {
    id: string;
    log: Logger;
  }
}

/** The request's id: the client's X-Request-Id when it is a SAFE_ID, else a new UUID. */
export function requestIdOf(header: string | string[] | undefined): string {
  return isSafeId(header) ? header : randomUUID();
}

const LOG = Symbol('request logger');

/** Attaches `req.id` and a lazy `req.log` (a child logger with `reqId`) to the app's requests. */
export function requestContext(app: Express, logger: Logger): RequestHandler {
  Object.defineProperty(app.request, 'log', {
    configurable: true,
    get(this: { id: string; [LOG]?: Logger }) {
      return (this[LOG] ??= logger.child({ reqId: this.id }));
    },
  });
  return (req, res, next) => {
    req.id = requestIdOf(req.headers['x-request-id']);
    res.setHeader('X-Request-Id', req.id);
    next();
  };
}
