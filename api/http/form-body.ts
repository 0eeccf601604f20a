/**
 * The OAuth form body (application/x-www-form-urlencoded, RFC 6749 appendix B): read whole up
 * to 16 KiB and parsed with URLSearchParams. Lighter than body-parser + qs on the token
 * endpoint's hot path (bench/results/design-figures.md), and strict: a repeated parameter is
 * invalid_request (RFC 6749 3.2), anything else than the form media type unsupported_grant_type.
 * One reader for both stacks: the Express auth routes (formBody) and the runtime lane's token
 * endpoint (readCanonicalForm) refuse the same bodies with the same OAuth errors.
 */
import type { IncomingMessage } from 'node:http';
import type { RequestHandler } from 'express';
import { OAuthError } from '../../shared/errors/index.ts';
import { UnfitInput, canonicalInput } from '../../shared/ids.ts';
import { onBodyTimeout } from './body-deadline.ts';

const FORM = 'application/x-www-form-urlencoded';
const LIMIT = 16 * 1024;
const MAX_PARAMS = 50;

/** Too large: refused before (or while) reading, and the client is asked to close rather than send the rest. */
const tooLarge = () =>
  new OAuthError('invalid_request', 'the body is too large', 400, { Connection: 'close' });

/** Reads the form: a null-prototype object of string parameters, or an OAuthError. */
export function readForm(req: IncomingMessage): Promise<Record<string, string>> {
  const type = req.headers['content-type'];
  if (typeof type !== 'string' || type.split(';', 1)[0].trim().toLowerCase() !== FORM)
    return Promise.reject(new OAuthError('unsupported_grant_type', `the body must be ${FORM}`));
  if (Number(req.headers['content-length'] ?? 0) > LIMIT) return Promise.reject(tooLarge());
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let failed = false;
    const fail = (err: OAuthError) => {
      offTimeout();
      if (failed) return;
      failed = true;
      reject(err);
    };
    // A stalled body (api/http/body-deadline.ts) keeps the OAuth shape of this endpoint's errors.
    const offTimeout = onBodyTimeout(req, (err) =>
      fail(new OAuthError('invalid_request', err.message, err.status, err.headers)),
    );
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > LIMIT) {
        fail(tooLarge());
        req.resume();
      } else if (!failed) chunks.push(c);
    });
    req.on('error', () => fail(new OAuthError('invalid_request', 'the body could not be read')));
    req.on('end', () => {
      offTimeout();
      if (failed) return;
      const body: Record<string, string> = Object.create(null);
      let count = 0;
      const text =
        chunks.length === 1
          ? chunks[0].toString('utf8')
          : Buffer.concat(chunks, size).toString('utf8');
      for (const [k, v] of new URLSearchParams(text)) {
        count += 1;
        if (count > MAX_PARAMS)
          return fail(new OAuthError('invalid_request', 'too many parameters'));
        if (k in body)
          return fail(new OAuthError('invalid_request', `parameter ${k.slice(0, 64)} is repeated`));
        body[k] = v;
      }
      failed = true;
      resolve(body);
    });
  });
}

/**
 * The form made canonical as the entry step (api/http/params.ts canonicalEntry) makes an Express
 * body: a parameter holding NUL or a lone surrogate is invalid_request naming it.
 */
export async function readCanonicalForm(req: IncomingMessage): Promise<Record<string, string>> {
  const form = await readForm(req);
  try {
    return canonicalInput(form, 'body');
  } catch (err) {
    if (err instanceof UnfitInput) throw new OAuthError('invalid_request', err.message);
    throw err;
  }
}

/** Sets req.body to the form (Express; the entry step makes it canonical as it is stored). */
export const formBody: RequestHandler = (req, _res, next) => {
  readForm(req).then((body) => {
    req.body = body;
    next();
  }, next);
};
