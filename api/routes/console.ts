/**
 * GET /console: the operators' web console. Its files are plain ES modules, a stylesheet and
 * one HTML page in console/ (no build step: see console/README.md), read once when the router
 * is made and served from memory by name, so a path never reaches the file system. The page
 * calls the same HTTP API as every other client; nothing is fetched from another origin.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { extname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Router, type Response } from 'express';
import { problem } from '../../shared/errors/index.ts';
import { route } from '../http/route.ts';

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

/** Serves the console page at /console and its files at /console/<path>. */
export function createConsoleRouter(): Router {
  const files = readConsoleFiles(CONSOLE_DIR);
  const router = Router();
  route(router, '/console', {
    get: (_req, res) => {
      const page = files.get('index.html');
      if (!page) throw problem('not_found', 'the console is not installed');
      send(res, page);
    },
  });
  route(router, '/console/*path', {
    get: (req, res) => {
      const raw: unknown = req.params.path;
      const name = Array.isArray(raw) ? raw.join('/') : String(raw);
      const file = files.get(name);
      if (!file)
        throw problem('not_found', `no console file ${JSON.stringify(name.slice(0, 200))}`);
      send(res, file);
    },
  });
  return router;
}
