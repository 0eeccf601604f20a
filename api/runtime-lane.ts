/**
 * The runtime lane: POST /api/v3/crypto/<operation> for every entry of CRYPTO_OPERATIONS
 * (encrypt, decrypt, sign, verify, data keys, re-encrypt, random...) served straight from
 * node:http, ahead of Express. These endpoints are what workloads call all day; measured
 * on this machine, the Express pipeline (router, body-parser, type-is, response helpers) cost
 * more than the cryptography itself. The lane calls the same checks and services as the rest of
 * the API (bearerClaims, requirePermissions, consumeApiBudget, runRuntime, problemBody): only the
 * transport differs. Anything it does not serve (other methods, paths, query strings) falls
 * through to Express.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AppContext } from './context.ts';
import { AppError } from '../shared/errors/index.ts';
import { UnfitInput, canonicalInput } from '../shared/ids.ts';
import { unfitProblem } from './http/params.ts';
import { bearerClaims, requirePermissions } from './middleware/authenticate.ts';
import { consumeApiBudget } from './middleware/rate-limit.ts';
import { problemBody, toAppError } from './middleware/errors.ts';
import { AUDIENCE_CORE } from './services/auth/access-tokens.ts';
import { CRYPTO_OPERATIONS, permissionsOf, runRuntime, type Operation } from './routes/crypto.ts';

const AUDIENCES = [AUDIENCE_CORE];
const SAFE_ID = /^[\w.:-]{1,128}$/;

interface LaneRoute { path: string; permissions: string[]; action: string; op: Operation }

/** Reads a JSON body up to `limit` bytes: 413 beyond, 415 for another media type, 400 when malformed. */
function readJson(req: IncomingMessage, limit: number): Promise<unknown> {
  const type = req.headers['content-type'];
  const media = typeof type === 'string' ? type.split(';', 1)[0].trim().toLowerCase() : '';
  if (media !== 'application/json' && !(media.startsWith('application/') && media.endsWith('+json'))) {
    return Promise.reject(new AppError('unsupported_media_type', `expected application/json, got ${type ?? 'no content type'}`));
  }
  if (Number(req.headers['content-length'] ?? 0) > limit) {
    return Promise.reject(new AppError('payload_too_large', 'the request body is larger than this endpoint accepts; use the stream endpoints for large data'));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > limit) {
        req.removeAllListeners('data');
        req.resume();
        reject(new AppError('payload_too_large', 'the request body is larger than this endpoint accepts; use the stream endpoints for large data'));
      } else chunks.push(c);
    });
    req.on('error', () => reject(new AppError('bad_request', 'the request body could not be read')));
    req.on('end', () => {
      if (size > limit) return;
      try {
        resolve(JSON.parse(Buffer.concat(chunks, size).toString('utf8')));
      } catch {
        reject(new AppError('malformed_json', 'the request body is not valid JSON'));
      }
    });
  }).then((body) => {
    // The same canonical form as the Express entry step (api/http/params.ts canonicalEntry).
    try {
      return canonicalInput(body, 'body');
    } catch (err) {
      throw err instanceof UnfitInput ? unfitProblem(err) : err;
    }
  });
}

/** The lane's request listener half: returns true when it took the request. */
export function createRuntimeLane(ctx: AppContext): (req: IncomingMessage, res: ServerResponse) => boolean {
  const routes = new Map<string, LaneRoute>(CRYPTO_OPERATIONS.map(([name, permission, op]) => {
    const path = `/api/v3/crypto/${name}`;
    return [path, { path, permissions: permissionsOf(permission), action: `crypto.${name}`, op }];
  }));
  const baseUrl = ctx.config.publicBaseUrl;
  const limit = ctx.config.jsonLimitBytes;

  async function serve(route: LaneRoute, req: IncomingMessage, res: ServerResponse, id: string): Promise<void> {
    const start = performance.now();
    let status = 200;
    let payload: string;
    let headers: Record<string, string> = {};
    try {
      const attempt = { method: 'POST', path: route.path, id };
      const claims = await bearerClaims(ctx, req.headers.authorization, AUDIENCES, attempt);
      requirePermissions(ctx, claims, route.permissions, attempt);
      await consumeApiBudget(ctx, claims, route.action);
      payload = JSON.stringify(await runRuntime(ctx, claims, route.action, route.op, await readJson(req, limit)));
    } catch (err) {
      const error = toAppError(err);
      if (error.status >= 500) ctx.logger.error({ reqId: id, err: (err as Error)?.message, stack: (err as Error)?.stack }, 'request failed');
      else ctx.logger.info({ reqId: id, code: error.code, status: error.status }, error.message);
      status = error.status;
      headers = error.headers ?? {};
      payload = problemBody(error, baseUrl, route.path);
      // An unread body must not be taken for the next request on this connection.
      if (!req.readableEnded) res.setHeader('Connection', 'close');
    }
    res.writeHead(status, {
      ...headers,
      'Content-Type': status === 200 ? 'application/json; charset=utf-8' : 'application/problem+json; charset=utf-8',
      'Content-Length': Buffer.byteLength(payload),
      'X-Request-Id': id,
    });
    res.end(payload);
    ctx.metrics.observe('POST', route.path, status, (performance.now() - start) / 1000);
  }

  return (req, res) => {
    if (req.method !== 'POST') return false;
    const route = routes.get(req.url ?? '');
    if (!route) return false;
    const incoming = req.headers['x-request-id'];
    const id = typeof incoming === 'string' && SAFE_ID.test(incoming) ? incoming : randomUUID();
    serve(route, req, res, id).catch((err) => {
      ctx.logger.error({ reqId: id, err: (err as Error)?.message }, 'runtime lane failed to answer');
      res.destroy();
    });
    return true;
  };
}
