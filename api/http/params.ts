/** The entry step that makes route parameters, the query and the body canonical. */
import type { RequestHandler } from 'express';
import { OAuthError, problem, type AppError } from '../../shared/errors/index.ts';
import { UnfitInput, canonicalInput, canonicalPath } from '../../shared/ids.ts';

/** Paths whose every answer has the OAuth error shape (RFC 6749 5.2), the refusal included. */
// Case-insensitive, as Express matches routes: /API/V3/AUTH/token is the same endpoint.
const OAUTH_PATHS = /^\/api\/(v3\/auth|authenticate)(\/|$|\?)/i;

/** The problem for input refused at the entry (400 validation-failed naming the field). */
export const unfitProblem = (unfit: UnfitInput): AppError =>
  problem('validation_failed', unfit.message, { details: { field: unfit.field } });

/** The error for input refused at the entry, in the shape the path answers with. */
function unfitInputError(url: string, unfit: UnfitInput): AppError | OAuthError {
  return OAUTH_PATHS.test(url)
    ? new OAuthError('invalid_request', unfit.message)
    : unfitProblem(unfit);
}

/**
 * The entry step, ahead of every router: the path's UUID segments lower-cased before routing
 * (so params are canonical), the query made canonical once, and whatever body reader runs later
 * (JSON, form, legacy JSON) has its result made canonical as it is stored on req.body. Input
 * holding NUL or a lone surrogate is refused with 400 naming the field; for a body the refusal
 * surfaces when the handler first reads req.body, inside the route's own error handling.
 */
export const canonicalEntry: RequestHandler = (req, _res, next) => {
  const unfitError = (err: unknown) =>
    err instanceof UnfitInput ? unfitInputError(req.originalUrl, err) : err;
  try {
    const q = req.url.indexOf('?');
    const path = q === -1 ? req.url : req.url.slice(0, q);
    const canonical = canonicalPath(path);
    if (canonical !== path) {
      req.url = canonical + (q === -1 ? '' : req.url.slice(q));
      req.originalUrl = req.url;
    }
    // Express 5 re-parses req.query from the URL on every read; an own property pins the canonical one.
    if (q !== -1)
      Object.defineProperty(req, 'query', {
        value: canonicalInput(req.query, 'query'),
        writable: true,
        enumerable: true,
        configurable: true,
      });
  } catch (err) {
    next(unfitError(err));
    return;
  }
  let body: unknown;
  let refused: unknown = null;
  Object.defineProperty(req, 'body', {
    enumerable: true,
    configurable: true,
    get() {
      if (refused) throw refused;
      return body;
    },
    set(value: unknown) {
      try {
        body = canonicalInput(value, 'body');
        refused = null;
      } catch (err) {
        body = undefined;
        refused = unfitError(err);
      }
    },
  });
  next();
};
