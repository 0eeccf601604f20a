/**
 * The baseline: a bare node:http server answering what Keyward's /healthz answers, run as its
 * own process so it gets the same treatment as the app. Usage: node bench/lib/bare-server.ts PORT
 */
import { createServer } from 'node:http';

const BODY = JSON.stringify({ status: 'ok' });
const port = Number(process.argv[2]);
if (!Number.isInteger(port) || port <= 0) throw new Error('usage: node bench/lib/bare-server.ts PORT');

const server = createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/healthz') {
    res.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(BODY) });
    res.end(BODY);
  } else if (req.method === 'POST' && req.url === '/echo') {
    // The crypto baseline: read the whole body and answer it back, as JSON.
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      res.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': body.length });
      res.end(body);
    });
  } else {
    res.writeHead(404).end();
  }
});
// The same keep-alive timeout as api/server.ts.
server.keepAliveTimeout = 65_000;
server.listen(port, '127.0.0.1');
process.on('SIGTERM', () => {
  server.close(() => process.exit(0));
  server.closeIdleConnections();
});
