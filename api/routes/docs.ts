/**
 * GET /api/v3/openapi.json and a self-contained rendered page at /docs (no CDN: the page works
 * on an air-gapped deployment).
 */
import { Router } from 'express';
import { route } from '../http/route.ts';
import { openApiDocument } from '../openapi/index.ts';

const escape = (s: string) => s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c] ?? c);

function renderHtml(doc: Record<string, unknown>): string {
  const paths = doc.paths as Record<string, Record<string, { summary?: string; description?: string; tags?: string[] }>>;
  const rows = Object.entries(paths).flatMap(([path, ops]) => Object.entries(ops).map(([method, op]) =>
    `<tr><td class="m ${method}">${method.toUpperCase()}</td><td><code>${escape(path)}</code></td><td>${escape(op.summary ?? '')}${op.description ? `<br><small>${escape(op.description)}</small>` : ''}</td></tr>`));
  const info = doc.info as { title: string; description: string; version: string };
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escape(info.title)} API</title>
<style>body{font:14px system-ui,sans-serif;margin:2em;max-width:70em}td{padding:.3em .6em;border-bottom:1px solid #ddd;vertical-align:top}.m{font-weight:bold}.get{color:#06c}.post{color:#080}.put,.patch{color:#a60}.delete{color:#c00}</style></head>
<body><h1>${escape(info.title)} API ${escape(info.version)}</h1><p>${escape(info.description)}</p>
<p>Machine-readable: <a href="/api/v3/openapi.json">/api/v3/openapi.json</a></p><table>${rows.join('')}</table></body></html>`;
}

/** Serves the document and its rendering. */
export function createDocsRouter(baseUrl: string): Router {
  const router = Router();
  route(router, '/api/v3/openapi.json', { get: (_req, res) => { res.json(openApiDocument(baseUrl)); } });
  route(router, '/docs', { get: (_req, res) => { res.type('html').send(renderHtml(openApiDocument(baseUrl))); } });
  return router;
}
