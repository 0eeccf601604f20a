/**
 * The one JSON body reader of the API: the Express routes (jsonBody, their body step) and the
 * runtime lane both call readJsonBody, so a path answers the same on either stack.
 * - No body (no Transfer-Encoding and no or a zero Content-Length, or zero bytes read): the
 *   body is undefined, whatever the media type says; the handler decides (RFC 9110 8.6).
 * - Another media type than application/json or application/*+json, a charset other than
 *   UTF-8 (RFC 8259 8.1) or any content coding: 415.
 * - More than `limit` bytes, declared or read: 413, the declared case before a byte is read.
 * - Not JSON: 400 malformed-json; JSON that is neither an object nor an array: 400
 *   validation-failed (no endpoint takes a bare value).
 */
import type { IncomingMessage } from 'node:http';
import type { RequestHandler } from 'express';
import { problem } from '../../shared/errors/index.ts';
import { UnfitInput, canonicalInput } from '../../shared/ids.ts';
import { unfitProblem } from './params.ts';
import { onBodyTimeout } from './body-deadline.ts';

const TOO_LARGE =
  'the request body is larger than this endpoint accepts; use the stream endpoints for large data';

/** Whether a request carries a body (RFC 9112 6.3). */
export function hasBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

const PLAIN_JSON = { type: 'application/json', charset: null } as const;

/** The media type and charset of a Content-Type header, lower-cased. */
function mediaOf(header: string | undefined): { type: string; charset: string | null } {
  // What nearly every client sends: no split, no parameter list (the lane's hot path).
  if (header === 'application/json') return PLAIN_JSON;
  const [type, ...params] = (header ?? '').split(';');
  const charset = params.map((p) => p.trim().toLowerCase()).find((p) => p.startsWith('charset='));
  return {
    type: type.trim().toLowerCase(),
    charset: charset ? charset.slice(8).replace(/^"|"$/g, '') : null,
  };
}

/** Whether a media type is JSON (application/json or a +json suffix, RFC 6839). */
const isJsonMedia = (type: string): boolean =>
  type === 'application/json' || (type.startsWith('application/') && type.endsWith('+json'));

/** Whether a body's declared length is already over `limit` (the caller asks the client to close). */
export const declaredTooLarge = (req: IncomingMessage, limit: number): boolean =>
  Number(req.headers['content-length'] ?? 0) > limit;

/** Reads and parses a JSON body under the rules above; undefined when there is none. */
export async function readJsonBody(req: IncomingMessage, limit: number): Promise<unknown> {
  if (!hasBody(req)) return undefined;
  const header = req.headers['content-type'];
  const { type, charset } = mediaOf(header);
  if (!isJsonMedia(type))
    throw problem(
      'unsupported_media_type',
      `expected application/json, got ${header ?? 'no content type'}`,
    );
  if (charset !== null && charset !== 'utf-8')
    throw problem(
      'unsupported_media_type',
      `a JSON body is UTF-8 (RFC 8259 8.1), not ${charset.slice(0, 40)}`,
    );
  const coding = req.headers['content-encoding'];
  if (coding !== undefined && coding.trim().toLowerCase() !== 'identity')
    throw problem('unsupported_media_type', 'a JSON body is sent without a content coding');
  if (declaredTooLarge(req, limit)) throw problem('payload_too_large', TOO_LARGE);
  const text = (await readCappedBytes(req, limit)).toString('utf8');
  if (text.length === 0) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw problem('malformed_json', 'the request body is not valid JSON');
  }
  if (value === null || typeof value !== 'object')
    throw problem('validation_failed', 'the body must be a JSON object', {
      details: { field: 'body' },
    });
  return value;
}

/** The body's bytes, up to `limit`; payload-too-large (the rest discarded) for a larger body. */
export function readCappedBytes(req: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    // A client gone before this reader started (during authentication) left a request that will never end.
    if (req.destroyed) {
      reject(problem('bad_request', 'the client aborted the request'));
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (c: Buffer) => {
      size += c.length;
      if (size <= limit) {
        chunks.push(c);
        return;
      }
      done();
      // Read and drop the rest, so the refusal is not taken for the answer to a half-sent body.
      req.resume();
      reject(problem('payload_too_large', TOO_LARGE));
    };
    const onEnd = () => {
      done();
      resolve(Buffer.concat(chunks, size));
    };
    const onError = () => {
      done();
      reject(problem('bad_request', 'the request body could not be read'));
    };
    const onClose = () => {
      if (req.readableEnded) return;
      done();
      reject(problem('bad_request', 'the client aborted the request'));
    };
    // A body that stalls (api/http/body-deadline.ts) is refused as one that is too large is.
    const offTimeout = onBodyTimeout(req, (err) => {
      done();
      reject(err);
    });
    function done() {
      offTimeout();
      req.off('data', onData).off('end', onEnd).off('error', onError).off('close', onClose);
      // An error after this reader gave up must still have a listener (an unhandled one kills the process).
      req.on('error', () => undefined);
    }
    req.on('data', onData).on('end', onEnd).on('error', onError).on('close', onClose);
  });
}

/**
 * readJsonBody, then the canonical form the Express entry step gives req.body
 * (api/http/params.ts canonicalEntry), for callers that do not go through req.body.
 */
export async function readCanonicalJson(req: IncomingMessage, limit: number): Promise<unknown> {
  const body = await readJsonBody(req, limit);
  try {
    return canonicalInput(body, 'body');
  } catch (err) {
    throw err instanceof UnfitInput ? unfitProblem(err) : err;
  }
}

/**
 * The JSON body step of the Express routes: the parsed body lands on req.body (made canonical
 * there by the entry step), or stays undefined when the request has none; at most `limitBytes`
 * (415, 413 and 400 problems otherwise).
 */
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
