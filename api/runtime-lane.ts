/**
 * The runtime lane: the routes of the route table marked `lane` (POST /api/v3/crypto/<operation>
 * for encrypt, decrypt, sign, verify, data keys, re-encrypt, random...) served straight from
 * node:http, ahead of Express. These endpoints are what workloads call all day; measured on this
 * machine, the Express pipeline (router, body-parser, type-is, response helpers) cost more than
 * the cryptography itself. Only the transport differs: the lane checks the bearer as the area's
 * authentication does (bearerClaims), then runs the same per-route core as the Express router
 * (serveRuntime: permissions, budget, the one JSON reader, the operation) and renders failures
 * with the same problem renderer. Anything else (other methods, paths, a trailing slash or a
 * query string) falls through to Express, which answers it the same way.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AppContext } from './context.ts';
import { bearerClaims } from './middleware/authenticate.ts';
import { logFailure, problemResponse, toAppError } from './middleware/errors.ts';
import {
  bytesMoved,
  clientGone,
  logAccess,
  noteCut,
  socketBytes,
} from './middleware/access-log.ts';
import type { AccessClaims } from './services/auth/access-tokens.ts';
import { serveRuntime } from './http/runtime-route.ts';
import { laneRoutes, type LaneRoute } from './routes/index.ts';

const SAFE_ID = /^[\w.:-]{1,128}$/;

/** The lane's request listener half: returns true when it took the request. */
export function createRuntimeLane(
  ctx: AppContext,
): (req: IncomingMessage, res: ServerResponse) => boolean {
  const routes = new Map<string, LaneRoute>(laneRoutes().map((r) => [r.path, r]));
  const baseUrl = ctx.config.publicBaseUrl;

  async function serve(
    lane: LaneRoute,
    req: IncomingMessage,
    res: ServerResponse,
    id: string,
  ): Promise<void> {
    const start = performance.now();
    const at = socketBytes(req);
    let status = 200;
    let payload: string;
    let claims: AccessClaims | undefined;
    let headers: Record<string, string> = { 'Content-Type': 'application/json; charset=utf-8' };
    // Listened for from the start: a client that leaves mid-body closes the response early.
    res.once('close', () => {
      logAccess(ctx.logger, ctx.metrics, {
        method: 'POST',
        route: lane.path,
        status,
        reqId: id,
        claims,
        started: start,
        ...bytesMoved(req, at),
        res,
      });
    });
    try {
      const attempt = { method: 'POST', path: lane.path, id };
      claims = await bearerClaims(ctx, req.headers.authorization, lane.audiences, attempt);
      payload = JSON.stringify(await serveRuntime(ctx, lane.route, claims, attempt, req));
    } catch (err) {
      const error = toAppError(err);
      // A client that left mid-request is told in the access line, not logged as a failure.
      if (!clientGone(req)) logFailure(ctx.logger.child({ reqId: id }), err, error);
      ({ status, headers, body: payload } = problemResponse(error, baseUrl, lane.path));
      // An unread body must not be taken for the next request on this connection.
      if (!req.readableEnded) res.setHeader('Connection', 'close');
    }
    res.writeHead(status, {
      ...headers,
      'Content-Length': Buffer.byteLength(payload),
      'X-Request-Id': id,
    });
    res.end(payload);
  }

  return (req, res) => {
    if (req.method !== 'POST') return false;
    const lane = routes.get(req.url ?? '');
    if (!lane) return false;
    const incoming = req.headers['x-request-id'];
    const id = typeof incoming === 'string' && SAFE_ID.test(incoming) ? incoming : randomUUID();
    serve(lane, req, res, id).catch((err) => {
      ctx.logger.error(
        { reqId: id, err: (err as Error)?.message },
        'runtime lane failed to answer',
      );
      noteCut(res);
      res.destroy();
    });
    return true;
  };
}
