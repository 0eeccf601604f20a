/**
 * GET /api/v3/openapi.json, and /docs (GET / redirects there): the document rendered by Redoc,
 * whose standalone bundle is served from the installed package (node_modules/redoc), so the
 * page works on an air-gapped deployment: nothing is fetched from another origin, and the CSP
 * says so.
 *
 * Tests: test/integration/admin/openapi.test.ts, test/integration/http/system-endpoints.test.ts,
 *   test/integration/problems.test.ts
 */
import { createRequire } from 'node:module';
import type { Response } from 'express';
import Type from 'typebox';
import { endpoint, type Endpoint } from '../rows/endpoint.ts';

/** Where the page loads the renderer from; one of our own paths. */
export const REDOC_BUNDLE_PATH = '/docs/redoc.standalone.js';
const BUNDLE_FILE = createRequire(import.meta.url).resolve('redoc/bundles/redoc.standalone.js');

// Redoc's styled-components inject <style> elements, its search index runs in a blob: worker,
// and it fetches the document from this origin; no script runs inline or from elsewhere.
const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  'worker-src blob:',
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

// Redoc starts by itself on a <redoc spec-url> element; its options are the element's attributes.
const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Keyward API reference</title>
<style>body { margin: 0; }</style>
</head>
<body>
<redoc spec-url="/api/v3/openapi.json" expand-responses="200,201,202" json-sample-expand-level="3" path-in-middle-panel="true"></redoc>
<script src="${REDOC_BUNDLE_PATH}"></script>
</body>
</html>
`;

const OPEN = { open: 'the API reference is public, like the API it describes' } as const;

/** The file sent with its headers: the bundle changes only with the installed package, so browsers keep it for a day. */
function sendBundle(res: Response): Promise<void> {
  res.setHeader('X-Content-Type-Options', 'nosniff');
  return new Promise((resolve, reject) => {
    res.sendFile(
      BUNDLE_FILE,
      {
        headers: { 'Content-Type': 'text/javascript; charset=utf-8' },
        maxAge: '1d',
        lastModified: true,
      },
      (err) => (err ? reject(err) : resolve()),
    );
  });
}

/**
 * The document, the reference page and the renderer bundle, and the root, which has nothing of
 * its own: a browser pointed at the service lands on the reference. `documentOf` builds the
 * document for a base URL (the route table's, which holds these rows); it is built once per URL.
 */
export function docsEndpoints(
  documentOf: (baseUrl: string) => Record<string, unknown>,
): Endpoint[] {
  const built = new Map<string, Record<string, unknown>>();
  const documentFor = (baseUrl: string) => {
    const doc = built.get(baseUrl) ?? documentOf(baseUrl);
    built.set(baseUrl, doc);
    return doc;
  };
  return [
    endpoint({
      method: 'get',
      path: '/',
      operationId: 'root',
      tag: 'system',
      summary: 'Redirects to the API reference (/docs)',
      access: OPEN,
      answer: {
        status: 302,
        description: 'the reference is at /docs',
        headers: { Location: 'the reference: /docs' },
        media: 'text/plain',
        schema: Type.String({ examples: ['Found. Redirecting to /docs'] }),
      },
      handle: (_ctx, { res }) => {
        res.redirect(302, '/docs');
      },
    }),
    endpoint({
      method: 'get',
      path: '/api/v3/openapi.json',
      operationId: 'openApiDocument',
      tag: 'system',
      summary: 'This document (OpenAPI 3.1)',
      access: OPEN,
      answer: {
        status: 200,
        description: 'the document',
        schema: Type.Object(
          { openapi: Type.String(), info: Type.Object({}), paths: Type.Object({}) },
          {
            examples: [
              { openapi: '3.1.0', info: { title: 'Keyward', version: '3.0.0' }, paths: {} },
            ],
          },
        ),
      },
      handle: (ctx) => documentFor(ctx.config.publicBaseUrl),
    }),
    endpoint({
      method: 'get',
      path: '/docs',
      operationId: 'apiReference',
      tag: 'system',
      summary: 'This document rendered as a readable reference (Redoc, served from this origin)',
      access: OPEN,
      answer: {
        status: 200,
        description: 'the reference page',
        media: 'text/html',
        schema: Type.String({
          examples: [
            '<!doctype html><html lang="en">...<redoc spec-url="/api/v3/openapi.json"></redoc><script src="/docs/redoc.standalone.js"></script>...',
          ],
        }),
      },
      handle: (_ctx, { res }) => {
        res.setHeader('Content-Security-Policy', CSP);
        res.setHeader('X-Content-Type-Options', 'nosniff');
        res.type('html').send(PAGE);
      },
    }),
    endpoint({
      method: 'get',
      path: REDOC_BUNDLE_PATH,
      operationId: 'apiReferenceRenderer',
      tag: 'system',
      summary: 'The renderer bundle the reference page loads, from the installed redoc package',
      access: OPEN,
      answer: {
        status: 200,
        description: 'JavaScript',
        media: 'text/javascript',
        schema: Type.String({
          examples: [
            '/*! For license information please see redoc.standalone.js.LICENSE.txt */ ...',
          ],
        }),
      },
      handle: (_ctx, { res }) => sendBundle(res),
    }),
  ];
}
