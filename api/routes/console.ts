/**
 * GET /console: the operators' web console. Its files are plain ES modules, a stylesheet and
 * one HTML page in console/ (no build step: see console/README.md), read once (at the first
 * request) and served from memory by name, so a path never reaches the file system. The page
 * calls the same HTTP API as every other client; nothing is fetched from another origin.
 *
 * Tests: test/integration/console-files.test.ts, test/integration/admin/openapi.test.ts,
 *   test/e2e/console-batch.test.ts, test/e2e/console.test.ts,
 *   test/integration/http/system-endpoints.test.ts
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { extname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Response } from 'express';
import Type from 'typebox';
import { problem } from '../../shared/errors/index.ts';
import { endpoint } from '../rows/endpoint.ts';

/** The console's folder in the checkout. */
const CONSOLE_DIR = fileURLToPath(new URL('../../console/', import.meta.url));

/** The media types the console is made of; any other file of the folder (README, tests) is not served. */
const TYPES = new Map([
  ['.html', 'text/html; charset=utf-8'],
  ['.js', 'text/javascript; charset=utf-8'],
  ['.css', 'text/css; charset=utf-8'],
  ['.svg', 'image/svg+xml'],
]);

/**
 * No inline script or style, nothing from another origin, no framing (clickjacking), no form
 * posts: the page's scripts reach the API with fetch on this origin only.
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

interface StaticFile {
  type: string;
  body: Buffer;
}

/** Every servable file under the folder, by its path relative to it with `/`. */
function readConsoleFiles(dir: string): Map<string, StaticFile> {
  const files = new Map<string, StaticFile>();
  // An install without the folder (an image built without it) serves the API and 404 here.
  if (!existsSync(dir)) return files;
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const type = TYPES.get(extname(entry.name));
    if (!type) continue;
    const path = join(entry.parentPath, entry.name);
    files.set(relative(dir, path).split(sep).join('/'), { type, body: readFileSync(path) });
  }
  return files;
}

function send(res: Response, file: StaticFile): void {
  res.setHeader('Content-Security-Policy', CONSOLE_CSP);
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Referrer-Policy', 'no-referrer');
  // frame-ancestors for browsers that predate it, and no window of another origin keeps a handle.
  res.setHeader('X-Frame-Options', 'DENY');
  res.setHeader('Cross-Origin-Opener-Policy', 'same-origin');
  // Revalidated on every load, so an upgrade of the service is never half old, half new.
  res.setHeader('Cache-Control', 'no-cache');
  res.type(file.type).send(file.body);
}

const OPEN = {
  open: 'a static page and its files; it signs in with the password grant itself',
} as const;

/** Read once, at the first request: no request names a path of the file system. */
let files: Map<string, StaticFile> | undefined;
const consoleFiles = () => (files ??= readConsoleFiles(CONSOLE_DIR));

/** Serves the console page at /console and its files at /console/<path>. */
export const CONSOLE_ENDPOINTS = [
  endpoint({
    method: 'get',
    path: '/console',
    operationId: 'console',
    tag: 'system',
    summary:
      'The web console for the people who run Keyward (static page; it signs in with the password grant)',
    access: OPEN,
    answer: {
      status: 200,
      description:
        'the console page, under a Content-Security-Policy without inline code or other origins',
      media: 'text/html',
      schema: Type.String({
        examples: [
          '<!doctype html><html lang="en">...<script type="module" src="/console/js/main.js"></script>...',
        ],
      }),
    },
    problems: { 404: 'the console is not installed' },
    handle: (_ctx, { res }) => {
      const page = consoleFiles().get('index.html');
      if (!page) throw problem('not_found', 'the console is not installed');
      send(res, page);
    },
  }),
  endpoint({
    method: 'get',
    path: '/console/*path',
    operationId: 'consoleFile',
    tag: 'system',
    summary:
      "A file of the console (its ES modules and stylesheet, from the checkout's console/ folder)",
    access: OPEN,
    params: Type.Object({ path: Type.String({ examples: ['js/main.js'] }) }),
    answer: {
      status: 200,
      description: 'the file',
      media: 'text/javascript',
      schema: Type.String({ examples: ['export function start() { ... }'] }),
    },
    problems: { 404: 'no such file in the console' },
    handle: (_ctx, { params, res }) => {
      const file = consoleFiles().get(params.path);
      if (!file)
        throw problem('not_found', `no console file ${JSON.stringify(params.path.slice(0, 200))}`);
      send(res, file);
    },
  }),
];
