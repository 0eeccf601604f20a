/**
 * Calls to the Keyward HTTP API, the same API every client uses: the bearer token of the
 * session, JSON in and out, and every failure as a ProblemError carrying the problem's title
 * and detail (RFC 7807) for the page to show.
 */
import { bearer, current } from './session.js';

/** An API failure in the problem's own words. */
export class ProblemError extends Error {
  /**
   * @param {string} title
   * @param {string} detail
   * @param {number} status
   */
  constructor(title, detail, status) {
    super(`${title}: ${detail}`);
    this.title = title;
    this.detail = detail;
    this.status = status;
  }
}

/**
 * @typedef {object} CallOptions
 * @property {unknown} [json] a JSON body
 * @property {FormData} [form] a multipart/form-data body
 * @property {Blob} [body] raw bytes, sent with `contentType`
 * @property {string} [contentType]
 * @property {Record<string, string | number | undefined>} [query]
 * @property {boolean} [home] use the home tenant's token (platform operations)
 * @property {string} [accept]
 */

/**
 * The answer of a call, read as a problem when it failed.
 * @param {string} method
 * @param {string} path
 * @param {CallOptions} [opts]
 * @returns {Promise<Response>}
 */
export async function call(method, path, opts = {}) {
  const token = await bearer(opts.home);
  const query = new URLSearchParams();
  for (const [k, v] of Object.entries(opts.query ?? {}))
    if (v !== undefined && v !== '') query.set(k, String(v));
  /** @type {Record<string, string>} */
  const headers = { authorization: `Bearer ${token}`, accept: opts.accept ?? 'application/json' };
  /** @type {BodyInit | undefined} */
  let body;
  if (opts.json !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(opts.json);
  } else if (opts.form) {
    body = opts.form;
  } else if (opts.body) {
    headers['content-type'] = opts.contentType ?? 'application/octet-stream';
    body = opts.body;
  }
  let res;
  try {
    res = await fetch(`${path}${query.size ? `?${query}` : ''}`, {
      method,
      headers,
      body,
      credentials: 'omit',
      cache: 'no-store',
    });
  } catch {
    throw new ProblemError('The service did not answer', 'check the connection and try again', 0);
  }
  if (!res.ok) throw await problemOf(res);
  return res;
}

/**
 * A failed answer as a ProblemError: problem+json's title and detail, or what there is.
 * @param {Response} res
 */
async function problemOf(res) {
  const text = await res.text().catch(() => '');
  try {
    const p = JSON.parse(text);
    if (p && typeof p === 'object')
      return new ProblemError(
        String(p.title ?? p.error ?? `HTTP ${res.status}`),
        String(p.detail ?? p.error_description ?? res.statusText),
        res.status,
      );
  } catch {
    // not JSON: fall through
  }
  return new ProblemError(`HTTP ${res.status}`, res.statusText || 'the request failed', res.status);
}

/**
 * A JSON call.
 * @param {string} method
 * @param {string} path
 * @param {CallOptions} [opts]
 * @returns {Promise<any>}
 */
export async function json(method, path, opts) {
  const res = await call(method, path, opts);
  return res.status === 204 ? null : res.json();
}

/** The admin API path of the tenant acted in. */
export function tenantPath() {
  return `/api/v3/admin/tenants/${encodeURIComponent(current().tenantId)}`;
}

/**
 * A path segment from a value (kid, id).
 * @param {string} value
 */
export const seg = (value) => encodeURIComponent(value);
