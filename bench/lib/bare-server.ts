/**
 * The baseline: a bare node:http server answering what Keyward's /healthz answers, run as its
 * own process so it gets the same treatment as the app. Usage: node bench/lib/bare-server.ts PORT
 */
import { createCipheriv, createSecretKey, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';

const BODY = JSON.stringify({ status: 'ok' });
// The encrypt floor: what any encrypt endpoint must do, and nothing else (no token, tenant, key
// lookup, rate limit, audit or metrics): parse the JSON, AES-256-GCM the data, answer a compact JWE.
const KEY = createSecretKey(randomBytes(32));
const HEADER = Buffer.from(
  JSON.stringify({ alg: 'dir', enc: 'A256GCM', kid: 'aes', ver: 1 }),
).toString('base64url');
const AAD = Buffer.from(HEADER, 'ascii');

function encryptFloor(body: Buffer): string {
  const { kid, data } = JSON.parse(body.toString('utf8')) as { kid: string; data: string };
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', KEY, iv).setAAD(AAD);
  const ct = Buffer.concat([cipher.update(Buffer.from(data, 'base64')), cipher.final()]);
  return JSON.stringify({
    kid,
    version: 1,
    ciphertext: `${HEADER}..${iv.toString('base64url')}.${ct.toString('base64url')}.${cipher.getAuthTag().toString('base64url')}`,
  });
}
const port = Number(process.argv[2]);
if (!Number.isInteger(port) || port <= 0)
  throw new Error('usage: node bench/lib/bare-server.ts PORT');

const server = createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/healthz') {
    res.writeHead(200, {
      'Content-Type': 'application/json; charset=utf-8',
      'Content-Length': Buffer.byteLength(BODY),
    });
    res.end(BODY);
  } else if (req.method === 'POST' && (req.url === '/echo' || req.url === '/encrypt-floor')) {
    // The crypto baseline: read the whole body and answer it back, as JSON.
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body =
        req.url === '/echo'
          ? Buffer.concat(chunks)
          : Buffer.from(encryptFloor(Buffer.concat(chunks)));
      res.writeHead(200, {
        'Content-Type': 'application/json; charset=utf-8',
        'Content-Length': body.length,
      });
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
