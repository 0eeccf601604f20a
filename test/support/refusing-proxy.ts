/**
 * An HTTP(S) proxy on 127.0.0.1 that forwards nothing: it records every request it is asked to
 * carry (a CONNECT for HTTPS, an absolute-form request for HTTP) and refuses it. Given to a client
 * as HTTPS_PROXY and HTTP_PROXY with NO_PROXY naming loopback, it proves the client sent nothing
 * beyond this machine: anything bound elsewhere is recorded here instead of leaving.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface RefusingProxy {
  url: string;
  /** What clients asked to reach (`CONNECT host:port`, `GET http://...`), in order. */
  recorded: string[];
  /** The variables that send a client's non-loopback traffic here. */
  env: Record<string, string>;
  close(): Promise<void>;
}

/** Starts the proxy on a free loopback port. */
export async function startRefusingProxy(): Promise<RefusingProxy> {
  const recorded: string[] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((req, res) => {
    recorded.push(`${req.method} ${req.url}`);
    res.writeHead(403, { connection: 'close' }).end('refused by the test proxy\n');
  });
  server.on('connect', (req, socket: Socket) => {
    recorded.push(`CONNECT ${req.url}`);
    socket.end('HTTP/1.1 403 Forbidden\r\nConnection: close\r\n\r\n');
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const loopback = '127.0.0.1,localhost,::1';
  return {
    url,
    recorded,
    env: {
      HTTPS_PROXY: url,
      HTTP_PROXY: url,
      https_proxy: url,
      http_proxy: url,
      NO_PROXY: loopback,
      no_proxy: loopback,
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
