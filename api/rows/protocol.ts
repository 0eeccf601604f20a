/**
 * Protocol rows: endpoints that speak another wire protocol than the route rows (their own
 * authentication, bodies and error shape: the AWS KMS API's SigV4, awsJson1_1 and
 * `{"__type", "message"}`). A protocol row is answered whole by its core, the same on Express
 * and on the runtime lane, and carries the OpenAPI operation that documents it; the route table
 * mounts it like any row, and the tests generated from the table (the OpenAPI coverage, the
 * hostile matrix) read its error media from it. docs/architecture.md, Protocol rows.
 */
import { Router, type Request, type Response } from 'express';
import type { IncomingMessage } from 'node:http';
import type { AppContext } from '../context.ts';
import type { AccessClaims } from '../services/auth/access-tokens.ts';

/** What a protocol core writes: status, headers (without length) and the body. */
export interface ProtocolAnswer {
  status: number;
  headers: Readonly<Record<string, string>>;
  body: string;
}

/** One request as a protocol core sees it, whichever stack serves it. */
export interface ProtocolExchange {
  req: IncomingMessage;
  /** The request id (X-Request-Id, or one made for it). */
  id: string;
  /** The path's parameters (none on the runtime lane, which serves fixed paths only). */
  params: Readonly<Record<string, string>>;
  /** Learns the caller once the protocol has authenticated it (for the access log and metrics). */
  noteClaims: (claims: AccessClaims) => void;
  /**
   * Learns the route template the core matched, where one row serves a whole mount (the
   * runtime lane's Vault mount): the access log and metrics then name the operation, not the mount.
   */
  noteRoute?: (route: string) => void;
}

/** One endpoint of another protocol, as a route file declares it. */
export interface ProtocolRow {
  method: 'get' | 'post' | 'put' | 'delete';
  /** Below the mount, Express syntax; '/' for the mount itself. */
  path: string;
  /** The protocol's name (`aws-kms`), for logs and tests. */
  protocol: string;
  /** The media type every error answer of the protocol takes (`application/x-amz-json-1.1`). */
  errorMedia: string;
  /** The error schema those answers carry in the document (`#/components/schemas/AwsError`). */
  errorSchema: string;
  /**
   * The runtime lane serves the row ahead of Express, at its path with any query string: every
   * answer must be the protocol's, a refusal of a hostile query included. A POST at a fixed path.
   */
  lane?: true;
  /** The OpenAPI operation, written in the protocol's terms; its errors in `errorMedia`. */
  operation: Readonly<Record<string, unknown>>;
  /** The whole answer to one request: authentication, the operation, its audit, any refusal. */
  serve: (ctx: AppContext, exchange: ProtocolExchange) => Promise<ProtocolAnswer>;
}

/** Declares a protocol row (a name to find the declarations by). */
export const protocolRow = (row: ProtocolRow): ProtocolRow => row;

/** An Express handler answering with a protocol core. */
const servedBy =
  (ctx: AppContext, serve: ProtocolRow['serve']) =>
  async (req: Request, res: Response): Promise<void> => {
    const answer = await serve(ctx, {
      req,
      id: String(req.id),
      params: req.params as Record<string, string>,
      noteClaims: (claims) => {
        req.auth = claims;
      },
    });
    // An unread body must not be taken for the next request on this connection.
    if (answer.status >= 400 && !req.readableEnded) res.setHeader('Connection', 'close');
    res.status(answer.status).set(answer.headers).send(answer.body);
  };

/**
 * A router serving `rows` on Express. No 405 helper: the path may be another row's for another
 * method (POST / is the AWS API, GET / the landing page). With `whole` (a mount the runtime lane
 * serves whole), every other method and path below the mount is that core's too, as on the lane.
 */
export function protocolRouter(
  ctx: AppContext,
  rows: readonly ProtocolRow[],
  whole?: ProtocolRow['serve'],
): Router {
  const router = Router({ mergeParams: true });
  for (const row of rows) router[row.method](row.path, servedBy(ctx, row.serve));
  if (whole) router.use(servedBy(ctx, whole));
  return router;
}
