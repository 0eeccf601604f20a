/**
 * The route row: one declaration per endpoint that the Express registration, the
 * request validation, the audit and the OpenAPI document (api/openapi/endpoints.ts) are all
 * made from. OpenBao's framework.Path and fastify's schema-per-route are the models: a row says
 * what the endpoint takes and answers, who may call it and what it records, and its handler
 * receives the input already checked and typed. A route file exports its rows; the route table
 * (api/routes/index.ts) mounts them.
 */
import {
  Router,
  type ErrorRequestHandler,
  type Request,
  type RequestHandler,
  type Response,
} from 'express';
import type { Static, TObject, TSchema } from 'typebox';
import type { AppContext } from '../context.ts';
import type { AccessClaims } from '../services/auth/access-tokens.ts';
import { actorOf, attemptOf } from '../access/checks.ts';
import { checkAccess, type Access } from '../access/rule.ts';
import { operationHandler } from './operation.ts';
import { jsonBody } from '../http/json-body.ts';
import { abandonRaw, acceptOneOf, responseSelection } from '../http/streaming.ts';
import { consumeApiBudget } from '../access/budget.ts';
import { route, type Handlers } from '../http/route.ts';
import { answerChecker, inputChecker, type InputChecker } from './input.ts';
import { AppError, OAuthError, problem } from '../../shared/errors/index.ts';
import { oauthShaped } from '../access/problems.ts';
import { formBody } from '../http/form-body.ts';
import type { ExpensiveDeclaration } from '../../shared/keys/work-budget.ts';

export type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';

export type { Access };

/** The caller a handler sees: none for an open row, the token's claims and audit actor otherwise. */
export type CallerOf<A extends Access> = A extends { open: string }
  ? { claims?: undefined; actor?: undefined }
  : { claims: AccessClaims; actor: string };

/** One media type of a body the handler reads or writes itself: its schema (bytes when none), example and part encodings. */
export interface MediaDoc {
  schema?: TSchema;
  example?: unknown;
  /** multipart/form-data: the media type of a part (`{metadata: {contentType: 'application/json'}}`). */
  encoding?: Readonly<Record<string, { contentType: string }>>;
}

/**
 * A body the handler reads itself (a stream: raw bytes, S/MIME, multipart/form-data through
 * streamMultipart), with no JSON reader in front: documented by its media types; the handler
 * checks the media type and the parts.
 */
export interface StreamRequest {
  media: Readonly<Record<string, MediaDoc>>;
  description?: string;
}

/**
 * The success answer: its status and, unless it is 204, the schema of its body. A JSON answer is
 * what the handler returns; with `media` (a stream or a file), or `content` (several media
 * types, one chosen by negotiation), the handler writes the answer itself through `input.res`
 * and the schemas, if any, describe those media.
 */
export interface Answer {
  /** A success, a redirect (302, its Location in `headers`), or 503 (readiness: not ready yet). */
  status: 200 | 201 | 202 | 204 | 302 | 503;
  description: string;
  schema?: TSchema;
  media?: string;
  /** The media types the handler may write, one chosen by negotiation (`negotiate`), each documented. */
  content?: Readonly<Record<string, MediaDoc>>;
  /** Headers the answer carries (documentation: the handler sets them through `input.res`). */
  headers?: Readonly<Record<string, string>>;
}

/**
 * A problem the endpoint may answer, as the document shows it: the text, or for an OAuth row
 * the text with the `error` codes it carries and the headers it sets (RFC 6749 5.2).
 */
export type ProblemText =
  string | { text: string; errors: readonly string[]; headers?: Readonly<Record<string, string>> };

/** What the handler receives: the checked input, the caller's claims and, for headers, the exchange. */
export type EndpointInput<P, Q, B, A extends Access = { anyOf: [string] }> = {
  params: P;
  query: Q;
  body: B;
  req: Request;
  res: Response;
} & CallerOf<A>;
/* The caller's claims and audit actor (`workload:<id>` or `user:<id>`) come from CallerOf. */

/** What one audit event names: its target and details. */
export interface AuditedTarget {
  target: string | null;
  details?: Record<string, unknown>;
}

/** The audit event (or events) a successful call records, in the path's tenant (or the caller's). */
export type EndpointAudit<P, Q, B, R, A extends Access = Access> = {
  action: string;
  /** The tenant whose chain records it when not the path's (or the caller's): one the call made or changed. */
  tenant?: (input: EndpointInput<P, Q, B, A>, result: NoInfer<R>) => string;
  /** Who acted, when the row is open (no token names the caller): e.g. the user a reset token names. */
  actor?: (input: EndpointInput<P, Q, B, A>, result: NoInfer<R>) => string;
} & (
  | {
      target: (input: EndpointInput<P, Q, B, A>, result: NoInfer<R>) => string | null;
      details?: (
        input: EndpointInput<P, Q, B, A>,
        result: NoInfer<R>,
      ) => Record<string, unknown> | undefined;
    }
  /** One event per thing the call made (each key a keystore import stored). */
  | { each: (input: EndpointInput<P, Q, B, A>, result: NoInfer<R>) => readonly AuditedTarget[] }
);

/** One endpoint, as a route file declares it. */
export interface EndpointRow<
  PS extends TObject,
  QS extends TObject,
  BS extends TSchema,
  R,
  A extends Access = Access,
  P = Static<PS>,
  Q = Static<QS>,
  B = Static<BS>,
> {
  method: Method;
  /** Below the mount, Express syntax (`/:id/password-reset`); '/' for the mount itself. */
  path: string;
  operationId: string;
  tag: string;
  summary: string;
  description?: string;
  access: A;
  /**
   * The rate-limit endpoint whose budget a call spends (per client and endpoint), taken
   * after the access check and before the body is read.
   */
  budget?: string;
  /** Path parameters; a value that does not fit names nothing (404). */
  params?: PS;
  /** The detail of that 404, when the row words it itself (default: no such record). */
  notFound?: string;
  query?: QS;
  /** The JSON body; objects are closed (unknown members refused naming the member). */
  body?: BS;
  /** Whether a request may come without a body (then the handler sees `{}`). */
  bodyOptional?: boolean;
  /**
   * The body's media: JSON (the default), or an OAuth form (application/x-www-form-urlencoded,
   * RFC 6749 appendix B) read by the one form reader (api/http/form-body.ts) and checked against
   * `body` like JSON. Form schemas stay open: OAuth ignores unknown parameters (RFC 6749 3.2).
   */
  bodyMedia?: 'json' | 'form';
  /** The JSON reader's cap in bytes, when the row takes less than the configured JSON limit. */
  bodyLimit?: number;
  /**
   * The shape of the row's errors: RFC 7807 problems (the default) or the OAuth shape
   * `{error, error_description}` (RFC 6749 5.2), where a refused input (its reader's or the
   * schema's refusal) is 400 invalid_request naming the field.
   */
  errors?: 'problem' | 'oauth';
  /**
   * The OpenAPI security requirements, when the row authenticates its caller itself (an open
   * row whose service checks client credentials, RFC 6749 2.3.1); documentation only.
   */
  security?: readonly Readonly<Record<string, readonly string[]>>[];
  /** A body the handler streams itself instead of a JSON `body` (read after access, budget and input checks). */
  request?: StreamRequest;
  /**
   * Answers of several media types: an Accept admitting none of `types` nor
   * problem+json is 406 before the body is read; with `select`, the X-Response-Content-Type
   * header may name one of them (400 for another value), documented as a header parameter.
   */
  negotiate?: { types: readonly string[]; select?: boolean };
  answer: Answer;
  /**
   * Other success answers the handler may give instead of `answer`, choosing one by setting its
   * status (`input.res.status(202)`): a batch accepted to run later beside one answered inline.
   */
  otherAnswers?: readonly Answer[];
  /** The problems the endpoint may answer beyond those every row may (401, 403): status → when. */
  problems?: Readonly<Record<number, ProblemText>>;
  /** The event (or events, each in its own tenant's chain) a successful call records. */
  audit?: EndpointAudit<P, Q, B, R, A> | readonly EndpointAudit<P, Q, B, R, A>[];
  /**
   * The caller-costed work the handler can trigger (docs/expensive-work.md): documented as
   * `x-keyward-expensive`, and driven with a hostile input of each kind while /healthz is probed
   * by the route-table test. A handler that reaches the expensive pool must declare it.
   */
  expensive?: ExpensiveDeclaration;
  /**
   * A runtime operation (docs/architecture.md, Runtime operations): `body` is one item and
   * `answer` the result of one; the row also takes a batch `{items: [1 to 1000 items]}`, answered
   * `{results: [...]}` in order, each result with its own status, one failure not failing the
   * others. The handler runs once per item and gets no `res`; each call and item spends a point
   * of `budget` and is a tallied audit event of that name. Served by one core on Express and on
   * the runtime lane (api/rows/operation.ts).
   */
  batch?: true;
  /**
   * The runtime lane (api/runtime-lane.ts) serves this row ahead of Express, at its exact path:
   * a batch row behind its area's bearer check, or an open row of an OAuth area that reads its
   * own body (`request`), whose handler then gets only `req`. The route table checks which.
   */
  lane?: true;
  /** The examples of the request and the answer, when they are not their schemas' own (rows sharing a schema). */
  examples?: { request?: unknown; answer?: unknown };
  /** OpenAPI extensions of the operation (`x-keyward-decrypts`: the oracle test drives it). */
  extensions?: Readonly<Record<`x-${string}`, unknown>>;
  handle: (ctx: AppContext, input: EndpointInput<P, Q, B, A>) => Promise<R> | R;
}

/** A row with its types erased, as the table and the generators hold it. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Endpoint = EndpointRow<TObject, TObject, TSchema, any, Access, any, any, any>;

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Audit = EndpointAudit<any, any, any, any, Access>;

/** The members of an input a row does not declare. */
type NoMembers = Record<never, never>;

/** Declares a row; the handler's input is typed from the row's schemas. */
export function endpoint<
  PS extends TObject = TObject<NoMembers>,
  QS extends TObject = TObject<NoMembers>,
  BS extends TSchema = TObject<NoMembers>,
  R = unknown,
  const A extends Access = Access,
>(row: EndpointRow<PS, QS, BS, R, A>): Endpoint {
  return row as unknown as Endpoint;
}

/** The Express handlers of one row: access, body reader, checked input, handler, audit, answer. */
function handlersOf(ctx: AppContext, row: Endpoint): RequestHandler[] {
  if (row.batch) return [operationHandler(ctx, row)];
  const check: InputChecker = inputChecker(row);
  const mode = ctx.config.answerCheck;
  const answers = [row.answer, ...(row.otherAnswers ?? [])].map((answer) => ({
    ...answer,
    mismatch: answerChecker(answer.schema, mode),
  }));
  const audits: readonly Audit[] = row.audit === undefined ? [] : [row.audit].flat();
  let mismatchLogged = false;
  const budget = row.budget;
  const access: RequestHandler = async (req, _res, next) => {
    // An open rule asks for no token.
    checkAccess(ctx, row.access, req.auth, attemptOf(req));
    // A budget is per client: an open row has none to spend.
    if (budget && req.auth) await consumeApiBudget(ctx, req.auth, budget);
    next();
  };
  const oauth = row.errors === 'oauth';
  const run: RequestHandler = async (req, res) => {
    const open = 'open' in row.access;
    let checked;
    try {
      checked = oauth ? oauthInput(check, req) : check(req);
    } catch (err) {
      // A refused query of a streamed body: the client is asked to close, its bytes discarded.
      if (row.request) abandonRaw(req, res);
      throw err;
    }
    const input = {
      ...checked,
      ...(open ? {} : { claims: req.auth, actor: actorOf(req) }),
      req,
      res,
    } as EndpointInput<unknown, unknown, unknown, Access>;
    res.status(row.answer.status);
    const result = await row.handle(ctx, input);
    const answer = answers.find((a) => a.status === res.statusCode);
    // A conditional GET the handler's own writer answered 304 Not Modified (sendFile: Last-Modified).
    if (!answer && res.statusCode === 304 && res.headersSent) return;
    if (!answer)
      throw new Error(`${row.operationId} answered ${res.statusCode}, which it does not declare`);
    for (const audit of audits) {
      const params = input.params as { tenantId?: string };
      const tenantId = audit.tenant?.(input, result) ?? params.tenantId ?? req.auth.tenantId;
      const actor = audit.actor?.(input, result) ?? input.actor ?? 'anonymous';
      const events: readonly AuditedTarget[] =
        'each' in audit
          ? audit.each(input, result)
          : [{ target: audit.target(input, result), details: audit.details?.(input, result) }];
      for (const { target, details } of events)
        ctx.audit.record({
          tenantId,
          actor,
          action: audit.action,
          outcome: 'success',
          target,
          details,
        });
    }
    const written = Boolean(answer.media ?? answer.content);
    const mismatch = written ? null : answer.mismatch?.(result);
    if (mismatch) {
      // Once per row and process: a drift is one bug, not a line per request.
      if (!mismatchLogged)
        ctx.logger.error(
          { operationId: row.operationId, mismatch },
          'an answer does not fit its documented schema: the route row and its service disagree (logged once per operation)',
        );
      mismatchLogged = true;
      if (mode === 'strict') throw problem('internal', 'the answer does not fit its schema');
    }
    if (written) return; // the handler wrote it
    if (answer.status === 204) res.end();
    else res.json(result);
  };
  const reader = !row.body
    ? []
    : row.bodyMedia === 'form'
      ? [formBody]
      : jsonBody(row.bodyLimit ?? ctx.config.jsonLimitBytes);
  const negotiate = row.negotiate
    ? [
        acceptOneOf(row.negotiate.types),
        ...(row.negotiate.select ? [responseSelection(row.negotiate.types)] : []),
      ]
    : [];
  return [access, ...negotiate, ...(oauth ? reader.map(oauthReader) : reader), run];
}

/**
 * A refused input of an OAuth row as the OAuth error it answers with: 400 invalid_request with
 * the refusal's text (a reader's malformed, too large or wrong media, or the schema's, naming
 * the field), its headers kept (Connection: close); the reader's own OAuth errors pass as they are.
 */
function oauthRefusal(err: unknown): unknown {
  if (err instanceof AppError && err.status < 500)
    return new OAuthError('invalid_request', err.message, 400, err.headers);
  return err;
}

const oauthInput = (check: InputChecker, req: Request) => {
  try {
    return check(req);
  } catch (err) {
    throw oauthRefusal(err);
  }
};

/** A reader whose refusals (passed on, or thrown by an async reader) take the OAuth shape. */
const oauthReader =
  (reader: RequestHandler): RequestHandler =>
  async (req, res, next) => {
    try {
      await reader(req, res, (err?: unknown) =>
        err === undefined ? next() : next(oauthRefusal(err)),
      );
    } catch (err) {
      next(oauthRefusal(err));
    }
  };

/** The errors of an OAuth row's path (a handler's, or its 405) in the OAuth shape. */
const oauthErrors: ErrorRequestHandler = (err, req, _res, next) => next(oauthShaped(err, req.log));

/** A router serving `rows` (mounted by the route table at their mount path). */
export function endpointRouter(ctx: AppContext, rows: readonly Endpoint[]): Router {
  const router = Router({ mergeParams: true });
  const byPath = new Map<string, Handlers>();
  const oauthPaths = new Set<string>();
  for (const row of rows) {
    const handlers = byPath.get(row.path) ?? {};
    if (handlers[row.method]) throw new Error(`two rows for ${row.method} ${row.path}`);
    if (byPath.has(row.path) && oauthPaths.has(row.path) !== (row.errors === 'oauth'))
      throw new Error(`the rows of ${row.path} answer errors in two shapes`);
    if (row.errors === 'oauth') oauthPaths.add(row.path);
    handlers[row.method] = handlersOf(ctx, row);
    byPath.set(row.path, handlers);
  }
  for (const [path, handlers] of byPath)
    route(router, path, handlers, oauthPaths.has(path) ? oauthErrors : undefined);
  return router;
}
