/**
 * The runtime lane: the rows of the route table marked `lane` (POST /api/v3/crypto/<operation>
 * for encrypt, decrypt, sign, verify, data keys, re-encrypt, random...) served straight from
 * node:http, ahead of Express. These endpoints are what workloads call all day; measured on this
 * machine, the Express pipeline (router, body-parser, type-is, response helpers) cost more than
 * the cryptography itself. Only the transport differs: the lane checks the bearer as the area's
 * authentication does (bearerClaims), then runs the same operation core as the Express router
 * (api/rows/operation.ts: access, budget, the one JSON reader, the operation) and renders failures
 * with the same problem renderer. Token issuance (POST /api/v3/auth/token) is here too, for the
 * same reason: its row's handler (the one form reader, then the grant) runs on both stacks, and its
 * failures take the same OAuth error shape; so is the AWS KMS API (POST /), a protocol row whose
 * core answers on both stacks. Anything else (other methods, paths, a trailing slash or, but for
 * a protocol row, a query string) falls through to Express, which answers it the same way.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AppContext } from './context.ts';
import { bearerClaims } from './access/checks.ts';
import { namingTenant } from '../shared/errors/index.ts';
import { requestIdOf } from './middleware/request-context.ts';
import {
  logFailure,
  oauthResponse,
  oauthShaped,
  problemResponse,
  toAppError,
} from './access/problems.ts';
import { bytesMoved, clientGone, logAccess, noteCut, socketBytes } from './http/access-log.ts';
import type { AccessClaims } from './services/auth/access-tokens.ts';
import { operationChecks, serveOperation } from './rows/operation.ts';
import type { EndpointInput } from './rows/endpoint.ts';
import { laneRoutes, type LaneRoute } from './routes/index.ts';

/** What the lane writes: status, headers (without length and request id) and the body. */
interface Answer {
  status: number;
  headers: Readonly<Record<string, string>>;
  body: string;
}

const JSON_HEADERS = { 'Content-Type': 'application/json; charset=utf-8' } as const;
const OAUTH_HEADERS = { ...JSON_HEADERS, 'Cache-Control': 'no-store' } as const;

/** The lane's request listener half: returns true when it took the request. */
export function createRuntimeLane(
  ctx: AppContext,
): (req: IncomingMessage, res: ServerResponse) => boolean {
  const table = laneRoutes();
  const routes = new Map<string, LaneRoute>(
    table.filter((r) => r.kind !== 'protocol-mount').map((r) => [r.path, r]),
  );
  const mounts = table.filter((r) => r.kind === 'protocol-mount');
  // Each body schema is compiled now, at startup, not on its first request.
  for (const r of routes.values()) if (r.kind === 'runtime') operationChecks(r.row);
  const baseUrl = ctx.config.publicBaseUrl;

  /** The answer of a runtime operation: bearer, permissions, budget, body, operation; or its problem. */
  async function runtimeAnswer(
    lane: Extract<LaneRoute, { kind: 'runtime' }>,
    req: IncomingMessage,
    id: string,
    noteClaims: (claims: AccessClaims) => void,
  ): Promise<Answer> {
    let tenantId: string | undefined;
    try {
      const attempt = { method: 'POST', path: lane.path, id };
      const claims = await bearerClaims(ctx, req.headers.authorization, lane.audiences, attempt);
      noteClaims(claims);
      tenantId = claims.tenantId;
      return {
        status: 200,
        headers: JSON_HEADERS,
        body: JSON.stringify(await serveOperation(ctx, lane.row, claims, attempt, req)),
      };
    } catch (err) {
      // A key not found is named with the tenant searched (the token's).
      const error = namingTenant(toAppError(err), tenantId);
      // A client that left mid-request is told in the access line, not logged as a failure.
      if (!clientGone(req)) logFailure(ctx.logger.child({ reqId: id }), err, error);
      return problemResponse(error, baseUrl, lane.path);
    }
  }

  /** The answer of an OAuth form endpoint (token issuance): JSON, never cached; or its OAuth error. */
  async function oauthAnswer(
    lane: Extract<LaneRoute, { kind: 'oauth' }>,
    req: IncomingMessage,
    id: string,
  ): Promise<Answer> {
    try {
      return {
        status: 200,
        headers: OAUTH_HEADERS,
        // An open lane row reads its own body: its handler needs the request only.
        body: JSON.stringify(
          await lane.row.handle(ctx, { req } as EndpointInput<unknown, unknown, unknown>),
        ),
      };
    } catch (err) {
      return oauthResponse(oauthShaped(err, ctx.logger.child({ reqId: id })));
    }
  }

  async function serve(
    lane: LaneRoute,
    req: IncomingMessage,
    res: ServerResponse,
    id: string,
  ): Promise<void> {
    let route = lane.path;
    const start = performance.now();
    const at = socketBytes(req);
    let status = 200;
    let claims: AccessClaims | undefined;
    // Listened for from the start: a client that leaves mid-body closes the response early.
    res.once('close', () => {
      logAccess(ctx.accessLog, ctx.metrics, {
        method: req.method ?? 'POST',
        route,
        status,
        reqId: id,
        claims,
        started: start,
        ...bytesMoved(req, at),
        res,
      });
    });
    const noteClaims = (c: AccessClaims) => (claims = c);
    const answer =
      lane.kind === 'protocol'
        ? await lane.row.serve(ctx, { req, id, params: {}, noteClaims })
        : lane.kind === 'protocol-mount'
          ? await lane.serve(ctx, {
              req,
              id,
              params: {},
              noteClaims,
              noteRoute: (r) => (route = r),
            })
          : lane.kind === 'runtime'
            ? await runtimeAnswer(lane, req, id, noteClaims)
            : await oauthAnswer(lane, req, id);
    status = answer.status;
    // An unread body must not be taken for the next request on this connection.
    if (status >= 400 && !req.readableEnded) res.setHeader('Connection', 'close');
    res.writeHead(status, {
      ...answer.headers,
      'Content-Length': Buffer.byteLength(answer.body),
      'X-Request-Id': id,
    });
    res.end(answer.body);
  }

  return (req, res) => {
    const url = req.url ?? '';
    const query = url.indexOf('?');
    const path = query < 0 ? url : url.slice(0, query);
    // A protocol mount the lane serves whole (Vault Transit under /v1/): every method and path
    // below it, so every answer there, an unknown path's included, is in its protocol's shape.
    const whole = mounts.find((m) => path.startsWith(`${m.path}/`));
    let lane: LaneRoute | undefined = whole;
    if (!lane) {
      if (req.method !== 'POST') return false;
      // A row's exact path; a protocol row's with a query string too: every answer of another
      // protocol (SigV4 signs the query), a refusal of hostile query input included, is in that
      // protocol's shape, not Express's problem+json.
      lane = routes.get(path);
      if (!lane || (query >= 0 && lane.kind !== 'protocol')) return false;
    }
    const id = requestIdOf(req.headers['x-request-id']);
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
