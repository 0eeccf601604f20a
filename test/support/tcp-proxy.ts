/**
 * A TCP proxy on 127.0.0.1 in front of a server the test must not stop (the machine's
 * Postgres): `refuse()` cuts every open connection and refuses new ones, as a database that went
 * away would; `accept()` lets connections through again.
 */
import { createConnection, createServer, type Socket } from 'node:net';
import { freePort } from '../../support/free-port.ts';

export interface TcpProxy {
  port: number;
  refuse(): void;
  accept(): void;
  close(): Promise<void>;
}

/** Starts a proxy to `target` on a free port. */
export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const port = await freePort();
  const open = new Set<Socket>();
  let refusing = false;
  const server = createServer((client) => {
    if (refusing) {
      client.destroy();
      return;
    }
    const upstream = createConnection(target);
    open.add(client);
    open.add(upstream);
    const end = () => {
      client.destroy();
      upstream.destroy();
      open.delete(client);
      open.delete(upstream);
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    port,
    refuse() {
      refusing = true;
      for (const s of open) s.destroy();
      open.clear();
    },
    accept() {
      refusing = false;
    },
    async close() {
      for (const s of open) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
