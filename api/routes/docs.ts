/**
 * GET /api/v3/openapi.json, and /docs (GET / redirects there): the document rendered by Redoc,
 * whose standalone bundle is served from the installed package (node_modules/redoc), so the
 * page works on an air-gapped deployment: nothing is fetched from another origin, and the CSP
 * says so.
 */
import { createRequire } from 'node:module';
import { Router } from 'express';
import { route } from '../http/route.ts';

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

/** Serves the document (built once by the route table), the reference page and the renderer bundle. */
export function createDocsRouter(document: Record<string, unknown>): Router {
  const router = Router();
  // The root has nothing of its own: a browser pointed at the service lands on the reference.
  route(router, '/', {
    get: (_req, res) => {
      res.redirect(302, '/docs');
    },
  });
  route(router, '/api/v3/openapi.json', {
    get: (_req, res) => {
      res.json(document);
    },
  });
  route(router, '/docs', {
    get: (_req, res) => {
      res.setHeader('Content-Security-Policy', CSP);
      res.setHeader('X-Content-Type-Options', 'nosniff');
      res.type('html').send(PAGE);
    },
  });
  route(router, REDOC_BUNDLE_PATH, {
    get: (_req, res, next) => {
      res.setHeader('X-Content-Type-Options', 'nosniff');
      // The bundle changes only with the installed package: let browsers keep it for a day.
      res.sendFile(
        BUNDLE_FILE,
        {
          headers: { 'Content-Type': 'text/javascript; charset=utf-8' },
          maxAge: '1d',
          lastModified: true,
        },
        (err) => {
          if (err) next(err);
        },
      );
    },
  });
  return router;
}
