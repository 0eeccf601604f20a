/**
 * The Express side of the error renderers (api/access/problems.ts): the error middleware and
 * the final not-found handler.
 */
import type { ErrorRequestHandler, RequestHandler, Response, Request } from 'express';
import { OAuthError, namingTenant, problem, type AppError } from '../../shared/errors/index.ts';
import {
  errMessage,
  logFailure,
  oauthResponse,
  problemResponse,
  toAppError,
} from '../access/problems.ts';
import { clientGone, noteCut } from '../http/access-log.ts';

/** Writes a problem+json response for an AppError. */
export function sendProblem(req: Request, res: Response, error: AppError, baseUrl: string): void {
  const response = problemResponse(error, baseUrl, req.originalUrl.split('?')[0]);
  for (const [k, v] of Object.entries(response.headers)) res.setHeader(k, v);
  res.status(response.status).send(response.body);
}

/** A tenant-scoped Admin path: the tenant it names is the one searched. */
const TENANT_PATH = /^\/api\/v3\/admin\/tenants\/([0-9a-fA-F-]{36})(?:[/?]|$)/;

/** The tenant a request searched: the Admin path's, else the token's (none before authentication). */
function tenantOf(req: Request): string | undefined {
  return TENANT_PATH.exec(req.originalUrl)?.[1]?.toLowerCase() ?? req.auth?.tenantId;
}

/** The error middleware; `baseUrl` is PUBLIC_BASE_URL. */
export function errorHandler(baseUrl: string): ErrorRequestHandler {
  return (err, req, res, _next) => {
    if (clientGone(req)) {
      // The client left (mid-upload, mid-download): nothing failed on our side and no answer can
      // reach it. The access line says so, at info, with the bytes that had passed.
      res.destroy();
      return;
    }
    if (res.headersSent) {
      // A streamed response already began: cut it so the client cannot take it for a whole result.
      noteCut(res);
      req.log.warn(
        { err: errMessage(err), code: (err as AppError)?.code },
        'failure after the response began; connection cut',
      );
      res.destroy();
      return;
    }
    // A refusal before the body has arrived (the bearer or permission check of an upload): the
    // client is asked to close, as the runtime lane asks it. Kept alive, the connection would
    // have Node read the rest of the body, however long, to find the next request.
    if (!req.complete) res.setHeader('Connection', 'close');
    if (err instanceof OAuthError) {
      const answer = oauthResponse(err);
      for (const [k, v] of Object.entries(answer.headers)) res.setHeader(k, v);
      res.status(answer.status).send(answer.body);
      return;
    }
    const error = namingTenant(toAppError(err), tenantOf(req));
    logFailure(req.log, err, error);
    sendProblem(req, res, error, baseUrl);
  };
}

/** Final handler: no route matched the path. */
export const notFound: RequestHandler = (req, _res, next) => {
  next(problem('not_found', `no endpoint at ${req.method} ${req.path}`));
};

/** Ahead of the rows of an OAuth area: no answer is cached (RFC 6749 5.1), refusals included. */
export const noStore: RequestHandler = (_req, res, next) => {
  res.setHeader('Cache-Control', 'no-store');
  next();
};

/** After the rows of an OAuth area: an unknown path is a 404 in the OAuth shape. */
export const oauthNotFound: RequestHandler = (req, _res, next) =>
  next(
    new OAuthError(
      'not_found',
      `no endpoint at ${req.method} ${req.baseUrl}${req.path.slice(0, 200)}`,
      404,
    ),
  );
