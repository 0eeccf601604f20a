/**
 * The HTTP floor of the small-messages bench: a bare node:http server that, for each message
 * posted to it as the convert endpoint's form, reads the request whole, does the message's
 * cryptographic floor (bench/lib/mailbox.ts) and answers as many bytes as the message, with no
 * parsing, token, key lookup, budget, log or audit, in one process per core (node:cluster, one
 * port). The same client as the HTTP way sends to it, so what it reaches is about the most any
 * HTTP service can reach on this machine: the figure the HTTP way is read against. The message's kind and sizes come in `x-message` (its manifest entry).
 * Usage: node bench/lib/mailbox-bare-server.ts PORT COUNT SEED
 */
import cluster from 'node:cluster';
import { createServer } from 'node:http';
import { availableParallelism } from 'node:os';
import { cryptoFloor, mailbox, type Message } from './mailbox.ts';

const [port, count, seed] = process.argv.slice(2).map(Number);
if (![port, count, seed].every((n) => Number.isInteger(n) && n > 0))
  throw new Error('usage: node bench/lib/mailbox-bare-server.ts PORT COUNT SEED');
if (cluster.isPrimary) {
  for (let i = 0; i < availableParallelism(); i++) cluster.fork();
  process.on('SIGTERM', () => {
    for (const w of Object.values(cluster.workers ?? {})) w?.kill('SIGTERM');
    process.exit(0);
  });
} else await serve();

async function serve(): Promise<void> {
  const box = await mailbox(count, seed, () => {});
  const floor = cryptoFloor(box.keys);
  const answer = Buffer.alloc(256 * 1024, 0x41);

  const server = createServer((req, res) => {
    if (req.method === 'GET') {
      res.end('ok');
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('error', () => res.destroy());
    req.on('end', () => {
      const m = JSON.parse(String(req.headers['x-message'])) as Message;
      floor.one(m);
      const body = answer.subarray(0, Math.min(m.bytes, answer.length));
      res.writeHead(200, {
        'Content-Type': 'application/octet-stream',
        'Content-Length': body.length,
      });
      res.end(body);
    });
  });
  server.listen(port, '127.0.0.1');
  process.on('SIGTERM', () => process.exit(0));
}
