/**
 * The JSON body step of the Express routes, over the one reader (api/http/json-body.ts) the
 * runtime lane uses too: the parsed body lands on req.body (made canonical there by the entry
 * step), or stays undefined when the request has none.
 */
import type { RequestHandler } from 'express';
import { declaredTooLarge, readJsonBody } from '../http/json-body.ts';

/** Reads a JSON body of at most `limitBytes` (415, 413 and 400 problems otherwise). */
export function jsonBody(limitBytes: number): RequestHandler[] {
  const read: RequestHandler = async (req, res, next) => {
    // A client announcing more than the cap is refused at once and asked to close, instead of
    // waiting for its 413 until it has sent the whole body.
    if (declaredTooLarge(req, limitBytes)) res.setHeader('Connection', 'close');
    const body = await readJsonBody(req, limitBytes);
    if (body !== undefined) req.body = body;
    next();
  };
  return [read];
}
