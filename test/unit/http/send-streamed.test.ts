/**
 * The byte count of a streamed answer (api/http/streaming.ts sendStreamed): what the audit and
 * the log line report as bytesOut, whole answers and answers cut midway alike.
 */
import { once } from 'node:events';
import { request, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { sendStreamed } from '../../../api/http/streaming.ts';

const PIECE = 16 * 1024;
const TOTAL = 20 * PIECE;

/** A server whose one route streams `produce()` and reports what sendStreamed counted. */
async function serve(produce: () => AsyncGenerator<Buffer>) {
  const counted = Promise.withResolvers<{ bytesOut: number; failed: boolean }>();
  const app = express();
  app.get('/', async (_req, res) => {
    const op = { bytesOut: 0 };
    try {
      await sendStreamed(res, 'application/octet-stream', produce(), op);
      counted.resolve({ bytesOut: op.bytesOut, failed: false });
    } catch {
      res.destroy();
      counted.resolve({ bytesOut: op.bytesOut, failed: true });
    }
  });
  const server: Server = app.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  return { url, counted: counted.promise, close: () => server.close() };
}

/** GETs `url`, reading until the end or `stopAt` bytes (then leaving); resolves to the bytes read. */
function get(url: string, stopAt = Infinity): Promise<number> {
  return new Promise((resolve) => {
    const req = request(url, (res: IncomingMessage) => {
      let got = 0;
      res.on('data', (c: Buffer) => {
        got += c.length;
        if (got >= stopAt) {
          req.destroy();
          resolve(got);
        }
      });
      res.on('end', () => resolve(got));
      res.on('error', () => resolve(got));
      res.on('aborted', () => resolve(got));
    });
    req.on('error', () => undefined);
    req.on('close', () => undefined);
    req.end();
  });
}

const pieces = async function* (n: number, thenFail: boolean) {
  for (let i = 0; i < n; i++) {
    yield Buffer.alloc(PIECE, i);
    // Let the pieces leave one by one, as a conversion's do.
    await new Promise((r) => setImmediate(r));
  }
  if (thenFail) throw new Error('the producer failed midway');
};

describe('the byte count of a streamed answer', () => {
  it('when the answer is sent whole, then bytesOut is its length', async () => {
    const s = await serve(() => pieces(TOTAL / PIECE, false));
    try {
      const received = await get(s.url);
      expect([received, await s.counted]).toEqual([TOTAL, { bytesOut: TOTAL, failed: false }]);
    } finally {
      s.close();
    }
  });

  it('when the producer fails after most of the answer has left, then bytesOut counts what had left, not 0', async () => {
    const sentBeforeFailure = 17 * PIECE;
    const s = await serve(() => pieces(17, true));
    try {
      const received = await get(s.url);
      const { bytesOut, failed } = await s.counted;
      expect(failed).toBe(true);
      // The client read all it could: what left is what it got.
      expect(received).toBeGreaterThan(PIECE * 4);
      expect(bytesOut).toBeLessThanOrEqual(sentBeforeFailure);
      expect(bytesOut).toBeGreaterThanOrEqual(received - PIECE);
    } finally {
      s.close();
    }
  });

  it('when the client leaves midway, then bytesOut counts at least what it read and never more than was produced', async () => {
    const s = await serve(() => pieces(TOTAL / PIECE, false));
    try {
      const received = await get(s.url, 200 * 1024);
      const { bytesOut, failed } = await s.counted;
      expect(failed).toBe(true);
      expect(bytesOut).toBeGreaterThanOrEqual(received - PIECE);
      expect(bytesOut).toBeLessThan(TOTAL);
    } finally {
      s.close();
    }
  });
});
