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
 *
 * The line is written on every request of the hottest routes, so it is not a pino call
 * (an object, pino's redaction walking it for 72 secret paths, JSON.stringify of it); it is one
 * template string with the fixed fields, in pino's format (level, time, the logger's bindings,
 * msg), appended to the logger's own buffered destination. Nothing to redact can be in it: its
 * fields are numbers, the route template, a validated request id and the tenant and actor ids.
 * ACCESS_LOG=off writes none, ACCESS_LOG_SAMPLE keeps that share of the successful fast ones.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { pino } from 'pino';
import { destinationOf, type Logger } from '../../shared/logger.ts';
import type { AccessClaims } from '../services/auth/access-tokens.ts';
import type { Metrics } from '../metrics.ts';
import { subjectActor } from '../../shared/audit/actor.ts';

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

/** What an operator chose for the access log (config: ACCESS_LOG, ACCESS_LOG_SAMPLE, ACCESS_LOG_SLOW_MS). */
export interface AccessLogOptions {
  enabled: boolean;
  /** Share of the successful requests faster than slowMs that are written, 0 to 1. */
  sample: number;
  slowMs: number;
}

/** Writes access lines; built once per process over its logger. */
export interface AccessLog {
  /** The line of one finished request, unless switched off, sampled out or below the log level. */
  write(line: AccessLine): void;
}

/** The fields of one access line. */
export interface AccessLine {
  reqId: string;
  method: string;
  route: string;
  status: number;
  ms: number;
  bytesIn: number;
  bytesOut: number;
  claims?: AccessClaims;
  aborted: boolean;
  cut: boolean;
}

const INFO = 30;
const str = JSON.stringify;

/** The access log over `logger`'s destination; `random` is the sampling draw (tests fix it). */
export function createAccessLog(
  logger: Logger,
  options: AccessLogOptions,
  random: () => number = Math.random,
): AccessLog {
  const { enabled, sample, slowMs } = options;
  const out = destinationOf(logger);
  // The logger's bindings as pino writes them (`,"pid":123`), fixed for the process.
  const bindings = (logger as unknown as Record<symbol, string>)[pino.symbols.chindingsSym] ?? '';
  return {
    write(l) {
      if (!enabled || !logger.isLevelEnabled('info')) return;
      // Failures, aborts, cuts and slow requests are always written: sampling thins out only
      // the lines nobody goes looking for.
      const always = l.status >= 400 || l.aborted || l.cut || l.ms >= slowMs;
      if (!always && sample < 1 && !(random() < sample)) return;
      out.write(
        `{"level":${INFO},"time":${Date.now()}${bindings},"reqId":${str(l.reqId)},"method":${str(l.method)},"route":${str(l.route)},"status":${l.status},"ms":${l.ms},"bytesIn":${l.bytesIn},"bytesOut":${l.bytesOut}` +
          (l.claims
            ? `,"tenantId":${str(l.claims.tenantId)},"actor":${str(subjectActor(l.claims))}`
            : '') +
          (l.aborted ? ',"aborted":true' : '') +
          (l.cut ? ',"cut":true' : '') +
          `,"msg":${l.aborted ? '"request aborted by the client"' : '"request"'}}\n`,
      );
    },
  };
}

/** Writes the access line of one request and records it in the HTTP metrics. */
export function logAccess(access: AccessLog, metrics: Metrics, e: AccessEntry): void {
  const seconds = (performance.now() - e.started) / 1000;
  const incomplete = !e.res.writableFinished;
  const cut = (e.res as ServerResponse & { [CUT]?: boolean })[CUT] === true;
  const aborted = incomplete && !cut;
  metrics.observe(e.method, e.route, aborted ? CLIENT_CLOSED : e.status, seconds);
  access.write({
    reqId: e.reqId,
    method: e.method,
    route: e.route,
    // The status the client saw, or 499 when it left before any was sent.
    status: aborted && !e.res.headersSent ? CLIENT_CLOSED : e.status,
    ms: Math.round(seconds * 1000),
    bytesIn: e.bytesIn,
    bytesOut: e.bytesOut,
    claims: e.claims,
    aborted,
    cut: incomplete && cut,
  });
}
