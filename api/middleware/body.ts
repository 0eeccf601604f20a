/**
 * Body parsing for JSON endpoints: only JSON media types (415 otherwise), a size cap (413),
 * and malformed JSON answered as a 400 problem by the error middleware.
 */
import express, { type RequestHandler } from 'express';
import { AppError } from '../../shared/errors/index.ts';

function hasBody(req: Parameters<RequestHandler>[0]): boolean {
  return req.headers['transfer-encoding'] !== undefined || (req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0');
}

/** JSON body parser with a 415 for other media types. */
export function jsonBody(limitBytes: number): RequestHandler[] {
  const parse = express.json({ limit: limitBytes, type: ['application/json', 'application/*+json'] });
  const requireJson: RequestHandler = (req, _res, next) => {
    if (hasBody(req) && !req.is(['application/json', 'application/*+json'])) {
      next(new AppError('unsupported_media_type', `expected application/json, got ${req.headers['content-type'] ?? 'no content type'}`));
      return;
    }
    next();
  };
  return [requireJson, parse];
}
