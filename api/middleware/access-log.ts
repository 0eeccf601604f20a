/**
 * One access line per request, on Express and on the runtime lane alike: method, route template,
 * status, duration, bytes in and out (on the wire, headers included), request id, tenant and actor. Nothing else of the request
 * is written (no URL, query, header or body), so no token, secret or password can reach it; a
 * request no route matched says `route: "unmatched"`. The same end of the request records the
 * HTTP metrics, so both count exactly the same requests.
 *
 * A client that goes away before its answer is complete is no server error: its line says
 * `aborted: true` with the bytes that had passed, at info, and the metrics count it as status
 * 499 (nginx's "client closed request"). A response the server itself cut (a failure after the
 * answer began, already logged once by the error handler) says `cut: true`.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { RequestHandler } from 'express';
import type { Logger } from '../../shared/logger.ts';
import type { AccessClaims } from '../services/auth/access-tokens.ts';
import { actorOfClaims } from '../services/auth/access-tokens.ts';
import { routeTemplate } from '../http/route.ts';
import type { Metrics } from './metrics.ts';

/** The status the metrics give a request whose client left before the answer was complete. */
export const CLIENT_CLOSED = 499;

/** What one access line says. */
export interface AccessEntry {
  method: string;
  route: string;
  status: number;
  reqId: string;
  claims?: AccessClaims;
  started: number;
  bytesIn: number;
  bytesOut: number;
  /** The response, read once it closed: completed, or not (the client left, or the server cut it). */
  res: ServerResponse;
}

const CUT = Symbol('cut by the server');

/** Marks a response the server cuts on purpose, so its end is not taken for a client abort. */
export function noteCut(res: ServerResponse): void {
  (res as ServerResponse & { [CUT]?: boolean })[CUT] = true;
}

/** True when the client's connection is gone: nothing more can be read from it or sent to it. */
export function clientGone(req: IncomingMessage): boolean {
  return req.socket === null || req.socket.destroyed;
}

const READ_BEFORE = Symbol('bytes read by the requests before');

/**
 * Where this request's bytes begin on its connection: what the requests before it on a kept-alive
 * connection read, and what was written so far. The request's own headers (and a small body) were
 * read before any handler ran, so the read count starts where the previous request ended.
 */
export function socketBytes(req: IncomingMessage): { read: number; written: number } {
  const socket = req.socket as (Socket & { [READ_BEFORE]?: number }) | null;
  return { read: socket?.[READ_BEFORE] ?? 0, written: socket?.bytesWritten ?? 0 };
}

/**
 * The bytes a request moved, headers included, once its response closed: received since the
 * previous request of the connection ended, and sent since this one began.
 */
export function bytesMoved(
  req: IncomingMessage,
  at: { read: number; written: number },
): { bytesIn: number; bytesOut: number } {
  const socket = req.socket as (Socket & { [READ_BEFORE]?: number }) | null;
  if (!socket) return { bytesIn: 0, bytesOut: 0 };
  socket[READ_BEFORE] = socket.bytesRead;
  return { bytesIn: socket.bytesRead - at.read, bytesOut: socket.bytesWritten - at.written };
}

/** Writes the access line of one request and records it in the HTTP metrics. */
export function logAccess(logger: Logger, metrics: Metrics, e: AccessEntry): void {
  const seconds = (performance.now() - e.started) / 1000;
  const incomplete = !e.res.writableFinished;
  const cut = (e.res as ServerResponse & { [CUT]?: boolean })[CUT] === true;
  const aborted = incomplete && !cut;
  metrics.observe(e.method, e.route, aborted ? CLIENT_CLOSED : e.status, seconds);
  // The line is built only when it is written: at LOG_LEVEL=warn (high-volume deployments) the
  // object, the actor string and the spreads cost more than the metrics on the runtime lane.
  if (!logger.isLevelEnabled('info')) return;
  logger.info(
    {
      reqId: e.reqId,
      method: e.method,
      route: e.route,
      // The status the client saw, or 499 when it left before any was sent.
      status: aborted && !e.res.headersSent ? CLIENT_CLOSED : e.status,
      ms: Math.round(seconds * 1000),
      bytesIn: e.bytesIn,
      bytesOut: e.bytesOut,
      ...(e.claims ? { tenantId: e.claims.tenantId, actor: actorOfClaims(e.claims) } : {}),
      ...(aborted ? { aborted: true } : {}),
      ...(incomplete && cut ? { cut: true } : {}),
    },
    aborted ? 'request aborted by the client' : 'request',
  );
}

/** The Express side: one line when the response ends, completed or not. */
export function accessLog(logger: Logger, metrics: Metrics): RequestHandler {
  return (req, res, next) => {
    const started = performance.now();
    const at = socketBytes(req);
    res.once('close', () => {
      logAccess(logger, metrics, {
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
