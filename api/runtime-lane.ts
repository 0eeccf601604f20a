/**
 * The runtime lane: the routes of the route table marked `lane` (POST /api/v3/crypto/<operation>
 * for encrypt, decrypt, sign, verify, data keys, re-encrypt, random...) served straight from
 * node:http, ahead of Express. These endpoints are what workloads call all day; measured on this
 * machine, the Express pipeline (router, body-parser, type-is, response helpers) cost more than
 * the cryptography itself. Only the transport differs: the lane checks the bearer as the area's
 * authentication does (bearerClaims), then runs the same per-route core as the Express router
 * (serveRuntime: permissions, budget, the one JSON reader, the operation) and renders failures
 * with the same problem renderer. Token issuance (POST /api/v3/auth/token) is here too, for the
 * same reason: its core (the one form reader, then the grant) is the Express route's, and its
 * failures take the same OAuth error shape. Anything else (other methods, paths, a trailing
 * slash or a query string) falls through to Express, which answers it the same way.
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
import { bodyChecks, serveRuntime } from './http/runtime-route.ts';
import { laneRoutes, type LaneRoute } from './routes/index.ts';
import { awsAnswer } from './http/aws-kms.ts';
import { VAULT_PREFIX, vaultAnswer } from './http/vault-transit.ts';

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
  const routes = new Map<string, LaneRoute>(laneRoutes().map((r) => [r.path, r]));
  // Each body schema is compiled now, at startup, not on its first request.
  for (const r of routes.values()) if (r.kind === 'runtime') bodyChecks(r.route);
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
        body: JSON.stringify(await serveRuntime(ctx, lane.route, claims, attempt, req)),
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
        body: JSON.stringify(await lane.route.serve(ctx, req)),
      };
    } catch (err) {
      return oauthResponse(oauthShaped(err, ctx.logger.child({ reqId: id })));
    }
  }

  async function serve(
    lane: LaneRoute | 'aws' | 'vault',
    req: IncomingMessage,
    res: ServerResponse,
    id: string,
  ): Promise<void> {
    const path = lane === 'aws' ? '/' : lane === 'vault' ? VAULT_PREFIX : lane.path;
    const start = performance.now();
    const at = socketBytes(req);
    let status = 200;
    let claims: AccessClaims | undefined;
    // Listened for from the start: a client that leaves mid-body closes the response early.
    res.once('close', () => {
      logAccess(ctx.accessLog, ctx.metrics, {
        method: req.method ?? 'POST',
        route: path,
        status,
        reqId: id,
        claims,
        started: start,
        ...bytesMoved(req, at),
        res,
      });
    });
    const answer =
      lane === 'aws'
        ? await awsAnswer(ctx, req, id, (c) => (claims = c))
        : lane === 'vault'
          ? await vaultAnswer(ctx, req, req.url ?? '', id, (c) => (claims = c))
          : lane.kind === 'runtime'
            ? await runtimeAnswer(lane, req, id, (c) => (claims = c))
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
    // The Vault Transit API: every method under /v1/, so every answer there is Vault's shape.
    const lane = req.url?.startsWith(`${VAULT_PREFIX}/`) ? 'vault' : undefined;
    if (lane === undefined && req.method !== 'POST') return false;
    // The AWS KMS API: POST / with X-Amz-Target, on the hot path like /crypto.
    // With a query string too: SigV4 signs the query, and every answer of this API, a refusal
    // of hostile query input included, must be the AWS error shape, not Express's problem+json.
    const url = req.url ?? '';
    const served = lane ?? (url === '/' || url.startsWith('/?') ? 'aws' : routes.get(url));
    if (!served) return false;
    const id = requestIdOf(req.headers['x-request-id']);
    serve(served, req, res, id).catch((err) => {
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
