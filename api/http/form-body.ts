/**
 * The OAuth form body (application/x-www-form-urlencoded, RFC 6749 appendix B): read whole up
 * to 16 KiB and parsed with URLSearchParams. Lighter than body-parser + qs on the token
 * endpoint's hot path (measured ~8% of a token request), and strict: a repeated parameter is
 * invalid_request (RFC 6749 3.2), anything else than the form media type unsupported_grant_type.
 */
import type { RequestHandler } from 'express';
import { OAuthError } from '../../shared/errors/index.ts';

const FORM = 'application/x-www-form-urlencoded';
const LIMIT = 16 * 1024;
const MAX_PARAMS = 50;

/** Sets req.body to a plain object of string parameters. */
export const formBody: RequestHandler = (req, res, next) => {
  const type = req.headers['content-type'];
  if (typeof type !== 'string' || type.split(';', 1)[0].trim().toLowerCase() !== FORM) {
    throw new OAuthError('unsupported_grant_type', `the body must be ${FORM}`);
  }
  const declared = Number(req.headers['content-length'] ?? 0);
  // Refused before reading; the client is asked to close rather than send the rest.
  if (declared > LIMIT) {
    res.setHeader('Connection', 'close');
    throw new OAuthError('invalid_request', 'the body is too large');
  }
  const chunks: Buffer[] = [];
  let size = 0;
  let failed = false;
  req.on('data', (c: Buffer) => {
    size += c.length;
    if (size > LIMIT && !failed) {
      failed = true;
      if (!res.headersSent) res.setHeader('Connection', 'close');
      next(new OAuthError('invalid_request', 'the body is too large'));
      req.resume();
    } else if (!failed) chunks.push(c);
  });
  req.on('error', () => {
    if (!failed) {
      failed = true;
      next(new OAuthError('invalid_request', 'the body could not be read'));
    }
  });
  req.on('end', () => {
    if (failed) return;
    const body: Record<string, string> = Object.create(null);
    let count = 0;
    for (const [k, v] of new URLSearchParams(Buffer.concat(chunks, size).toString('utf8'))) {
      count += 1;
      if (count > MAX_PARAMS) return next(new OAuthError('invalid_request', 'too many parameters'));
      if (k in body)
        return next(new OAuthError('invalid_request', `parameter ${k.slice(0, 64)} is repeated`));
      body[k] = v;
    }
    req.body = body;
    next();
  });
};
