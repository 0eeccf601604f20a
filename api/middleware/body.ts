/**
 * Body parsing for JSON endpoints: only JSON media types (415 otherwise), a size cap (413),
 * and malformed JSON answered as a 400 problem by the error middleware.
 */
import express, { type RequestHandler } from 'express';
import { AppError } from '../../shared/errors/index.ts';

function hasBody(req: Parameters<RequestHandler>[0]): boolean {
  return req.headers['transfer-encoding'] !== undefined || (req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0');
}

const tooLarge = () => new AppError('payload_too_large', 'the request body is larger than this endpoint accepts; use the stream endpoints for large data');

/** JSON body parser with a 415 for other media types. */
export function jsonBody(limitBytes: number): RequestHandler[] {
  const parse = express.json({ limit: limitBytes, type: ['application/json', 'application/*+json'] });
  const requireJson: RequestHandler = (req, res, next) => {
    if (hasBody(req) && !req.is(['application/json', 'application/*+json'])) {
      next(new AppError('unsupported_media_type', `expected application/json, got ${req.headers['content-type'] ?? 'no content type'}`));
      return;
    }
    // body-parser reads a refused body to its end before it answers, so a client announcing
    // gigabytes would wait for its 413 until it had sent them all: a declared length over the
    // cap is refused at once, and the client asked to close instead of sending the rest.
    if (Number(req.headers['content-length'] ?? 0) > limitBytes) {
      res.setHeader('Connection', 'close');
      next(tooLarge());
      return;
    }
    next();
  };
  return [requireJson, parse];
}
